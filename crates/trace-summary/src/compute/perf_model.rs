//! TraceLens' perf-model sheets (its reference's §6-§7): each modelled op
//! of a trace with its parameters (a GEMM's M, N, K, ...), FLOPs and bytes
//! moved from its input shapes, and the TFLOPS/s and TB/s its kernels
//! reached, grouped by op and parameters. `GEMM.csv` today: the aten GEMMs
//! (`aten::mm`, `addmm`, `bmm`, `baddbmm`, `_scaled_mm` and its aliases)
//! and vLLM's `rocm_unquantized_gemm`.

use std::ops::{Add, Mul, Sub};

use rustc_hash::FxHashMap as HashMap;

use super::{Analysis, GroupSum, Ranked, ev, median, sample_std, unique_args};
use crate::{
    compute::{Cell, Table},
    parse::{Cat, Num, Parsed, shape_of},
};

/// A value of a cpu_op's argument lists, read back from its Python repr.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Py {
    Int(i64),
    /// Any other scalar (a float, a bool, `None`, a dict): its repr.
    Other(String),
    Str(String),
    Seq(Vec<Py>),
}

impl Py {
    /// Parse the repr [`crate::parse`] keeps of an argument list (lists
    /// as tuples). `None` for what it does not read.
    pub(super) fn parse(text: &str) -> Option<Py> {
        let mut r = Reader { s: text.as_bytes(), at: 0 };
        let v = r.value()?;
        (r.at == r.s.len()).then_some(v)
    }

    fn seq(&self) -> Option<&[Py]> {
        match self {
            Py::Seq(v) => Some(v),
            _ => None,
        }
    }

    fn int(&self) -> Option<i64> {
        match self {
            Py::Int(i) => Some(*i),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Py::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Its Python repr, sequences as tuples (`tuple`) or as lists.
    pub(super) fn repr(&self, tuple: bool) -> String {
        match self {
            Py::Int(i) => i.to_string(),
            Py::Other(s) => s.clone(),
            Py::Str(s) => crate::parse::py_str_repr(s),
            Py::Seq(items) => {
                let inner: Vec<String> = items.iter().map(|i| i.repr(tuple)).collect();
                match (tuple, items.len()) {
                    (true, 1) => format!("({},)", inner[0]),
                    (true, _) => format!("({})", inner.join(", ")),
                    (false, _) => format!("[{}]", inner.join(", ")),
                }
            }
        }
    }
}

struct Reader<'a> {
    s: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn value(&mut self) -> Option<Py> {
        match self.peek()? {
            b'(' | b'[' => {
                let close = if self.peek()? == b'(' { b')' } else { b']' };
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek()? == close {
                        self.at += 1;
                        return Some(Py::Seq(items));
                    }
                    items.push(self.value()?);
                    match self.peek()? {
                        b',' => {
                            self.at += 1;
                            if self.peek() == Some(b' ') {
                                self.at += 1;
                            }
                        }
                        c if c == close => {}
                        _ => return None,
                    }
                }
            }
            q @ (b'\'' | b'"') => {
                self.at += 1;
                let mut out = String::new();
                loop {
                    let rest = std::str::from_utf8(&self.s[self.at..]).ok()?;
                    let c = rest.chars().next()?;
                    self.at += c.len_utf8();
                    match c {
                        '\\' => {
                            let e = rest[1..].chars().next()?;
                            self.at += e.len_utf8();
                            match e {
                                'n' => out.push('\n'),
                                'r' => out.push('\r'),
                                't' => out.push('\t'),
                                'x' => {
                                    let hex =
                                        std::str::from_utf8(self.s.get(self.at..self.at + 2)?)
                                            .ok()?;
                                    out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
                                    self.at += 2;
                                }
                                other => out.push(other),
                            }
                        }
                        c if c as u32 == u32::from(q) => return Some(Py::Str(out)),
                        c => out.push(c),
                    }
                }
            }
            b'{' => {
                // A dict (as Python prints it): kept as its text.
                let start = self.at;
                let mut depth = 0usize;
                let mut quote: Option<u8> = None;
                while let Some(c) = self.peek() {
                    self.at += 1;
                    match (quote, c) {
                        (Some(_), b'\\') => self.at += 1,
                        (Some(q), c) if c == q => quote = None,
                        (Some(_), _) => {}
                        (None, b'\'' | b'"') => quote = Some(c),
                        (None, b'{' | b'[' | b'(') => depth += 1,
                        (None, b'}' | b']' | b')') => {
                            depth -= 1;
                            if depth == 0 {
                                let text = std::str::from_utf8(&self.s[start..self.at]).ok()?;
                                return Some(Py::Other(text.to_string()));
                            }
                        }
                        _ => {}
                    }
                }
                None
            }
            _ => {
                let start = self.at;
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b')' | b']') {
                        break;
                    }
                    self.at += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.at]).ok()?;
                Some(match text.parse::<i64>() {
                    Ok(i) => Py::Int(i),
                    Err(_) => Py::Other(text.to_string()),
                })
            }
        }
    }
}

/// A `param: <key>` value of a model.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Param {
    Int(i64),
    Bool(bool),
    /// A tuple, a number: its `str()` (its repr).
    Text(String),
    /// A string: itself in a cell, quoted inside `perf_params`.
    Str(String),
    /// `None`: a missing cell.
    Missing,
}

/// What a model makes of one op: its parameters in order, FLOPs, bytes
/// (`None`: an element size it does not know) and `Compute Spec`.
pub(super) struct Model {
    pub(super) params: Vec<(&'static str, Param)>,
    pub(super) flops: f64,
    pub(super) bytes: Option<f64>,
    pub(super) spec: String,
}

/// Bytes per element of a dtype (the reference's §7.1 `bpe`).
fn bpe(dtype: &str) -> Option<i128> {
    Some(match dtype.to_lowercase().as_str() {
        "double" | "long int" => 8,
        "float" | "scalar" | "int" => 4,
        "c10::half" | "c10::bfloat16" => 2,
        "c10::float8_e4m3fnuz"
        | "c10::float8_e4m3fn"
        | "c10::float8_e5m2"
        | "c10::float8_e8m0fnu"
        | "unsigned char"
        | "signed char"
        | "fp8"
        | "c10::float4_e2m1fn_x2"
        | "fp4" => 1,
        _ => return None,
    })
}

/// The compute precision of a dtype (§7.1 `prec`).
fn prec(dtype: &str) -> Option<&'static str> {
    Some(match dtype.to_lowercase().as_str() {
        "float" => "fp32",
        "double" => "fp64",
        "c10::half" => "fp16",
        "c10::bfloat16" => "bf16",
        "c10::float8_e4m3fnuz" | "c10::float8_e4m3fn" | "unsigned char" | "fp8" => "fp8",
        "fp4" | "mxfp4" | "c10::float4_e2m1fn_x2" => "fp4",
        _ => return None,
    })
}

/// A shape as a parameter: its tuple repr (`(8, 4096)`).
fn shape_param(d: &[Py]) -> Param {
    Param::Text(Py::Seq(d.to_vec()).repr(true))
}

/// Integers as a tuple's repr.
fn ints_repr(v: &[i128]) -> String {
    Py::Seq(v.iter().map(|&x| Py::Int(x as i64)).collect()).repr(true)
}

/// `Compute Spec` (§7.2): `<maf>_<precision>` of `dtype`'s precision, empty
/// without one.
fn spec(maf: &str, dtype: Option<&str>) -> String {
    dtype.and_then(prec).map_or_else(String::new, |p| format!("{maf}_{p}"))
}

/// Every perf-model sheet this crate writes, in TraceLens' order: `GEMM`
/// ([`crate::Summary::gemm`]), then [`crate::Summary::perf_sheets`]'.
pub const PERF_SHEETS: [&str; 27] = [
    "GEMM",
    "SDPA_fwd",
    "SDPA_bwd",
    "CONV_fwd",
    "CONV_bwd",
    "InferenceAttention_fwd",
    "BinaryElementwise",
    "GroupedGEMM_fwd",
    "MoE_comm_fwd",
    "MoE_comm_bwd",
    "SSM_fwd",
    "SSM_bwd",
    "RoPE_fwd",
    "CrossEntropy_fwd",
    "UnaryElementwise",
    "MoE_fused_fwd",
    "MoE_unfused_fwd",
    "MoE_aux_fwd",
    "RMSNorm_fwd",
    "elementwise_fwd",
    "GroupQuant_fwd",
    "FusedRoPE_fwd",
    "CustomCollective_fwd",
    "mHC_fwd",
    "Normalization",
    "Reduce_fwd",
    "Reduce_bwd",
];

/// The GEMM ops modelled, by name: every op of TraceLens' `GEMM` family
/// (§7.3, §7.4.1).
const GEMM_OPS: [&str; 43] = [
    "aten::mm",
    "aten::addmm",
    "aten::_scaled_mm",
    "trtllm::cublas_scaled_mm",
    "bitsandbytes::int8_linear_matmul",
    "aten::bmm",
    "aten::baddbmm",
    "vllm::rocm_unquantized_gemm",
    "vllm::gemm_with_dynamic_quant",
    "tex_ts::te_gemm_ts",
    "_Linear_yfwd_mm",
    "_LinearBackward_xgrad_mm",
    "_LinearBackward_wgrad_mm",
    "_LayerNormLinear_yfwd_mm",
    "_LayerNormLinearBackward_xgrad_mm",
    "_LayerNormLinearBackward_wgrad_mm",
    "primus_turbo_cpp_extension::hipblaslt_gemm_fp8",
    "primus_turbo::hipblaslt_gemm_fp8",
    "primus_turbo_cpp_extension::hipblaslt_gemm_fp4",
    "primus_turbo::hipblaslt_gemm_fp4",
    "aiter::gemm_a4w4",
    "aiter::_gemm_a4w4_asm",
    "aiter::batched_gemm_a16wfp4_",
    "sglang_profiler::fp8_utils_gemm_a8w8_blockscale",
    "sglang_profiler::gemm_a8w8_blockscale_gemm_a8w8_blockscale",
    "vllm::rocm_aiter_triton_gemm_a8w8_blockscale",
    "aiter::gemm_a8w8_blockscale_ck",
    "aiter::gemm_a8w8_blockscale_cktile",
    "aiter::gemm_a8w8_blockscale_bpreshuffle_ck",
    "aiter::gemm_a8w8_blockscale_bpreshuffle_cktile",
    "aiter::flatmm_a8w8_blockscale_asm",
    "aiter::gfx950_a8w8_blockscale_asm",
    "aiter::gemm_a8w8_ck",
    "aiter::gemm_a8w8_bpreshuffle_ck",
    "aiter::gemm_a8w8_bpreshuffle",
    "vllm::_rocm_aiter_preshuffled_per_token_w8a8_gemm",
    "aiter::_gemm_a8w8_blockscale_asm",
    "aiter::gemm_a16w16",
    "aiter::gemm_a16w16_atomic_",
    "sglang_profiler::gemm_kernels_flydsl_hgemm",
    "aiter::_gemm_a16w16_asm",
    "aiter::gemm_afp4wfp4_",
    BATCHED_A8W8,
];

/// `sglang_profiler::batched_gemm_a8w8_...`, one long name.
const BATCHED_A8W8: &str = "sglang_profiler::batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant";

/// An op's argument lists, read back.
struct Args {
    dims: Vec<Py>,
    types: Vec<Py>,
    strides: Option<Vec<Py>>,
    /// `Output type`, where the trace records it.
    output_types: Option<Vec<Py>>,
    /// `Concrete Inputs` (strings in Kineto traces).
    concrete: Option<Vec<Py>>,
    /// The iteration annotation of an [`ANNOTATED`] op (§1.1 step 2):
    /// the name of the user annotation around it, `NA` without one.
    annotation: Option<String>,
    /// The args of a fused conv backward's forward (`ConvBias_` of its
    /// `Sequence number`), as TraceLens' class-wide cache keeps them.
    forward: Option<Box<Args>>,
}

impl Args {
    fn dim(&self, i: usize, j: usize) -> Option<i64> {
        self.dims.get(i)?.seq()?.get(j)?.int()
    }

    fn dims_of(&self, i: usize) -> Option<&[Py]> {
        self.dims.get(i)?.seq()
    }

    fn dtype(&self, i: usize) -> Option<&str> {
        self.types.get(i)?.str()
    }

    /// `stride_A`-style parameter: the strides of input `i`, `None` when
    /// the op records no strides.
    fn stride(&self, i: usize) -> Option<Param> {
        match &self.strides {
            None => Some(Param::Missing),
            Some(s) => Some(Param::Text(s.get(i)?.repr(true))),
        }
    }

    /// Stride `i`, `None` (a missing cell) also where the list is too
    /// short: the models that tolerate that.
    fn lenient_stride(&self, i: usize) -> Param {
        self.stride(i).unwrap_or(Param::Missing)
    }

    /// Stride `i` where the model needs `Input Strides` itself: `None`
    /// (it raises) without the key too.
    fn required_stride(&self, i: usize) -> Option<Param> {
        self.strides.as_ref()?;
        self.stride(i)
    }
}

/// The GEMM model of op `name` (§7.4.1); `None` where TraceLens' model
/// raises (a missing shape, an index out of range): the op has no row.
fn gemm(name: &str, a: &Args, transpose: Option<(Option<bool>, Option<bool>)>) -> Option<Model> {
    if let Some(model) = gemm_more(name, a) {
        let mut model = model?;
        if let Some(t) = transpose {
            model.params.push(("transpose", transpose_param(t)));
        }
        return Some(model);
    }
    let pair = |x: &str, y: &str| Param::Text(format!("({}, {})", py(x), py(y)));
    let (mut params, flops, bytes, dtype) = match name {
        "aten::mm"
        | "aten::addmm"
        | "aten::_scaled_mm"
        | "trtllm::cublas_scaled_mm"
        | "bitsandbytes::int8_linear_matmul" => {
            // aten::addmm's inputs: bias, then A and B.
            let o = usize::from(name == "aten::addmm");
            let (m, k, n) = (a.dim(o, 0)?, a.dim(o, 1)?, a.dim(o + 1, 1)?);
            let (ta, tb) = (a.dtype(o)?, a.dtype(o + 1)?);
            let bias = match name {
                "aten::addmm" => true,
                "aten::mm" => false,
                _ => a.dims.len() == 3,
            };
            let (m, n, k) = (i128::from(m), i128::from(n), i128::from(k));
            let flops = 2 * m * n * k + if bias { m * n } else { 0 };
            let size = bpe(ta);
            let bytes = if name.contains("scaled_mm") || name.starts_with("bitsandbytes") {
                // Output 2 bytes for 1-byte inputs; bpe(T1) must be known.
                bpe(tb)?;
                let e = size?;
                let out = match e {
                    1 => Some(2),
                    2 | 4 => Some(e),
                    _ => None,
                };
                out.map(|out| m * k * e + k * n * e + m * n * out + if bias { n * e } else { 0 })
            } else {
                size.map(|e| m * k * e + k * n * e + m * n * e + if bias { n * e } else { 0 })
            };
            let params =
                gemm_params(1, [m, n, k], bias, [a.stride(o)?, a.stride(o + 1)?], pair(ta, tb));
            (params, flops, bytes, ta)
        }
        "aten::bmm" | "aten::baddbmm" => {
            let o = usize::from(name == "aten::baddbmm");
            let d = a.dims_of(o)?;
            if d.len() != 3 {
                return None;
            }
            let (b, m, k) = (d[0].int()?, d[1].int()?, d[2].int()?);
            let n = a.dim(o + 1, 2)?;
            let (ta, tb) = (a.dtype(o)?, a.dtype(o + 1)?);
            let bias = o == 1;
            let (b, m, n, k) = (i128::from(b), i128::from(m), i128::from(n), i128::from(k));
            let flops = b * (2 * m * n * k + if bias { m * n } else { 0 });
            let bytes = bpe(ta)
                .map(|e| b * (m * k * e + k * n * e + m * n * e + if bias { n * e } else { 0 }));
            let mut params =
                gemm_params(b, [m, n, k], bias, [a.stride(o)?, a.stride(o + 1)?], pair(ta, tb));
            // The batched models name B first.
            params.rotate_right(1);
            (params, flops, bytes, ta)
        }
        "vllm::rocm_unquantized_gemm" => {
            let (m, n, k) = (a.dim(0, 0)?, a.dim(1, 0)?, a.dim(0, 1)?);
            let bias = a.dims.len() > 2 && a.dims_of(2).is_some_and(|d| !d.is_empty());
            let (t0, t1) = (a.dtype(0)?, a.dtype(1)?);
            let t2 = a.dtype(2).unwrap_or("");
            let (m, n, k) = (i128::from(m), i128::from(n), i128::from(k));
            let flops = 2 * m * n * k + if bias { m * n } else { 0 };
            let out = if bias { bpe(t2) } else { bpe(t1) };
            let bytes = match (bpe(t0), bpe(t1), out) {
                (Some(e0), Some(e1), Some(eo)) => {
                    Some(m * k * e0 + k * n * e1 + m * n * eo + if bias { n * eo } else { 0 })
                }
                _ => None,
            };
            let params = vec![
                ("M", Param::Int(m as i64)),
                ("N", Param::Int(n as i64)),
                ("K", Param::Int(k as i64)),
                ("bias", Param::Bool(bias)),
                ("dtype_A_B", Param::Text(format!("({}, {}, {})", py(t0), py(t1), py(t2)))),
                ("B", Param::Int(1)),
            ];
            (params, flops, bytes, t0)
        }
        _ => return None,
    };
    if let Some(t) = transpose {
        params.push(("transpose", transpose_param(t)));
    }
    let spec = spec("matrix", Some(dtype));
    Some(Model { params, flops: flops as f64, bytes: bytes.map(|b| b as f64), spec })
}

/// A kernel name's transpose flags as the `transpose` parameter.
fn transpose_param((ta, tb): (Option<bool>, Option<bool>)) -> Param {
    let flag = |f: Option<bool>| match f {
        Some(true) => "True",
        Some(false) => "False",
        None => "None",
    };
    Param::Text(format!("({}, {})", flag(ta), flag(tb)))
}

/// The GEMM models beyond aten's (§7.4.1: Transformer Engine's, Primus
/// Turbo's hipBLASLt FP8/FP4, aiter's and SGLang's): `None` for another
/// op; `Some(None)` where the model raises (a missing shape or type).
fn gemm_more(name: &str, a: &Args) -> Option<Option<Model>> {
    let built = match name {
        "vllm::gemm_with_dynamic_quant" => vllm_dynamic_quant(a),
        "_Linear_yfwd_mm"
        | "_LinearBackward_xgrad_mm"
        | "_LinearBackward_wgrad_mm"
        | "_LayerNormLinear_yfwd_mm"
        | "_LayerNormLinearBackward_xgrad_mm"
        | "_LayerNormLinearBackward_wgrad_mm" => te_linear(a),
        "tex_ts::te_gemm_ts" => te_gemm_ts(a),
        "primus_turbo_cpp_extension::hipblaslt_gemm_fp8"
        | "primus_turbo::hipblaslt_gemm_fp8"
        | "primus_turbo_cpp_extension::hipblaslt_gemm_fp4"
        | "primus_turbo::hipblaslt_gemm_fp4" => primus_hipblaslt(name, a),
        "aiter::gemm_a4w4" | "aiter::_gemm_a4w4_asm" => aiter_a4w4(a),
        "aiter::batched_gemm_a16wfp4_" => aiter_batched_a16wfp4(a),
        BATCHED_A8W8 => sglang_batched_a8w8(a),
        "aiter::gemm_a16w16_atomic_"
        | "sglang_profiler::gemm_kernels_flydsl_hgemm"
        | "aiter::_gemm_a16w16_asm"
        | "aiter::gemm_a16w16" => a16w16(name, a),
        "aiter::gemm_afp4wfp4_" => aiter_afp4wfp4(a),
        "sglang_profiler::fp8_utils_gemm_a8w8_blockscale"
        | "sglang_profiler::gemm_a8w8_blockscale_gemm_a8w8_blockscale"
        | "vllm::rocm_aiter_triton_gemm_a8w8_blockscale"
        | "aiter::gemm_a8w8_blockscale_ck"
        | "aiter::gemm_a8w8_blockscale_cktile"
        | "aiter::gemm_a8w8_blockscale_bpreshuffle_ck"
        | "aiter::gemm_a8w8_blockscale_bpreshuffle_cktile"
        | "aiter::flatmm_a8w8_blockscale_asm"
        | "aiter::gfx950_a8w8_blockscale_asm"
        | "aiter::gemm_a8w8_ck"
        | "aiter::gemm_a8w8_bpreshuffle_ck"
        | "aiter::gemm_a8w8_bpreshuffle"
        | "vllm::_rocm_aiter_preshuffled_per_token_w8a8_gemm"
        | "aiter::_gemm_a8w8_blockscale_asm" => a8w8_blockscale(a),
        _ => return None,
    };
    Some(built)
}

/// An op's dims as the GEMM models multiply them (i128: no overflow).
fn dims(a: &Args) -> impl Fn(usize, usize) -> Option<i128> + '_ {
    |i, j| a.dim(i, j).map(i128::from)
}

/// An op's arg dtypes, by position.
fn types<'a>(a: &'a Args) -> impl Fn(usize) -> Option<&'a str> + 'a {
    |i| a.dtype(i)
}

/// Bytes per element of a dtype, where it is one.
fn size(t: Option<&str>) -> Option<i128> {
    t.and_then(bpe)
}

fn f(e: Option<i128>) -> Option<f64> {
    e.map(|e| e as f64)
}

fn int(x: i128) -> Param {
    Param::Int(x as i64)
}

/// Dtypes as TraceLens prints a tuple of them.
fn tuple(items: &[&str]) -> Param {
    let inner: Vec<String> = items.iter().map(|t| py(t)).collect();
    Param::Text(format!("({})", inner.join(", ")))
}

/// What every GEMM row computes: FLOPs 2MNK (+ MN with a bias), bytes of
/// its element sizes (A, B, out, bias; `None` if one is unknown).
fn base(m: i128, n: i128, k: i128, bias: bool, sizes: [Option<f64>; 4]) -> (f64, Option<f64>) {
    let flops = (2 * m * n * k + if bias { m * n } else { 0 }) as f64;
    let [ea, eb, eo, ebias] = sizes;
    let bytes = match (ea, eb, eo, ebias) {
        (Some(ea), Some(eb), Some(eo), Some(ebias)) => Some(
            (m * k) as f64 * ea
                + (k * n) as f64 * eb
                + (m * n) as f64 * eo
                + if bias { n as f64 * ebias } else { 0.0 },
        ),
        _ => None,
    };
    (flops, bytes)
}

/// The GEMM parameters before the batch: M, N, K, bias, strides, dtypes.
fn core(
    m: i128,
    n: i128,
    k: i128,
    bias: bool,
    [sa, sb]: [Param; 2],
    dtypes: Param,
) -> Vec<(&'static str, Param)> {
    vec![
        ("M", int(m)),
        ("N", int(n)),
        ("K", int(k)),
        ("bias", Param::Bool(bias)),
        ("stride_A", sa),
        ("stride_B", sb),
        ("dtype_A_B", dtypes),
    ]
}

/// FP4 bytes: halves of K at each side's size, the block scales, a 2-byte
/// output.
fn fp4_bytes(
    [m, n, k]: [i128; 3],
    [ta, tb]: [Option<&str>; 2],
    [sa, sb]: [Option<&str>; 2],
) -> Option<f64> {
    let (ea, eb) = (size(ta)?, size(tb)?);
    let (sa, sb) = (size(sa).unwrap_or(1), size(sb).unwrap_or(1));
    let blocks = (k + 31) / 32;
    Some(
        (m * (k / 2) * ea + n * (k / 2) * eb + m * blocks * sa + n * blocks * sb + m * n * 2)
            as f64,
    )
}

fn model(
    params: Vec<(&'static str, Param)>,
    (flops, bytes): (f64, Option<f64>),
    spec: String,
) -> Option<Model> {
    Some(Model { params, flops, bytes, spec })
}

/// vLLM's GEMM with dynamic quantization: its first two 2-D args are A and B.
fn vllm_dynamic_quant(a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let two: Vec<usize> =
        (0..a.dims.len()).filter(|&i| a.dims_of(i).is_some_and(|d| d.len() == 2)).collect();
    let (ia, ib) = match two.as_slice() {
        [x, y, ..] => (*x, *y),
        _ => (0, 1),
    };
    let (m, k, n) = (dim(ia, 0)?, dim(ia, 1)?, dim(ib, 0)?);
    let (t0, t1) = (ty(0)?, ty(1)?);
    let e = f(size(Some(t0)));
    let strides = [a.stride(0)?, a.stride(1)?];
    let mut params = core(m, n, k, false, strides, tuple(&[t0, t1]));
    params.push(("B", Param::Int(1)));
    model(params, base(m, n, k, false, [e; 4]), spec("matrix", Some(t0)))
}

/// Transformer Engine's linear GEMMs (`_Linear*_mm`, `_LayerNormLinear*_mm`): A and B of one dtype,
/// a 2-byte output.
fn te_linear(a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let (m, k, n) = (dim(0, 0)?, dim(0, 1)?, dim(1, 1)?);
    let (t0, t1) = (ty(0)?, ty(1)?);
    if t0 != t1 {
        return None;
    }
    let e = f(size(Some(t0)));
    let strides = [a.stride(0)?, a.stride(1)?];
    let mut params = core(m, n, k, false, strides, tuple(&[t0, t1]));
    params.push(("B", Param::Int(1)));
    model(params, base(m, n, k, false, [e, e, Some(2.0), e]), spec("matrix", Some(t0)))
}

/// Transformer Engine's `te_gemm_ts`: its transposes and bias from its concrete args.
fn te_gemm_ts(a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let c = |i: usize| a.concrete.as_deref().and_then(|c| c.get(i)).and_then(Py::str);
    let (ta, tb) = (c(4)? == "1", c(9)? == "1");
    let (a0, a1) = (dim(0, 0)?, dim(0, 1)?);
    let (b0, b1) = (dim(5, 0)?, dim(5, 1)?);
    let (m, k) = if ta { (a0, a1) } else { (a1, a0) };
    let n = if tb { b1 } else { b0 };
    let bias = !c(14)?.is_empty();
    let types = [ty(0)?, ty(5)?, ty(10)?, ty(18)?];
    let sizes = [0, 1, 2, 3].map(|i| f(size(Some(types[i]))));
    let strides = [a.stride(0)?, a.stride(5)?];
    let mut params = core(m, n, k, bias, strides, tuple(&types));
    params.push(("B", Param::Int(1)));
    model(
        params,
        base(m, n, k, bias, [sizes[0], sizes[1], sizes[2], sizes[3]]),
        spec("matrix", Some(types[0])),
    )
}

/// Primus Turbo's hipBLASLt FP8 and FP4 GEMMs: their transposes from their concrete args; FP4 packs
/// two values per byte.
fn primus_hipblaslt(name: &str, a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let c = |i: usize| a.concrete.as_deref().and_then(|c| c.get(i)).and_then(Py::str);
    let flag =
        |i: usize| c(i).is_some_and(|t| matches!(t.trim().to_lowercase().as_str(), "true" | "1"));
    let (mut ta, mut tb, tc) = (flag(5), flag(6), flag(7));
    let (mut ia, mut ib) = (0, 2);
    if tc {
        (ia, ib) = (ib, ia);
        (ta, tb) = (!tb, !ta);
    }
    let m = if ta { dim(ia, 1)? } else { dim(ia, 0)? };
    let k = if ta { dim(ia, 0)? } else { dim(ia, 1)? };
    let n = if tb { dim(ib, 0)? } else { dim(ib, 1)? };
    let (t0, t2) = (ty(0)?, ty(2)?);
    let (s1, s3) = (ty(1), ty(3));
    let fp4 = name.ends_with("fp4");
    let k = if fp4 { 2 * k } else { k };
    let mut params =
        core(m, n, k, false, [a.lenient_stride(0), a.lenient_stride(2)], tuple(&[t0, t2]));
    let opt = |t: Option<&str>| t.map_or(Param::Missing, |t| Param::Str(t.into()));
    params.push(("dtype_scaleA", opt(s1)));
    params.push(("dtype_scaleB", opt(s3)));
    params.push(("B", Param::Int(1)));
    let figures = match fp4 {
        true => {
            ((2 * m * n * k) as f64, Some(fp4_bytes([m, n, k], [Some(t0), Some(t2)], [s1, s3])?))
        }
        false => {
            let (ea, eb) = (size(Some(t0))?, size(Some(t2))?);
            let out = if ea == 1 { 2 } else { ea };
            base(m, n, k, false, [f(Some(ea)), f(Some(eb)), f(Some(out)), f(Some(ea))])
        }
    };
    model(params, figures, spec("matrix", Some(t0)))
}

/// aiter's A4W4 GEMMs: FP4 A and B (two values per byte) with block scales.
fn aiter_a4w4(a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let (m, k, n) = (dim(0, 0)?, 2 * dim(0, 1)?, dim(1, 0)?);
    let (t0, t1) = (ty(0)?, ty(1)?);
    let (s2, s3) = (ty(2), ty(3));
    let mut params =
        core(m, n, k, false, [a.lenient_stride(0), a.lenient_stride(1)], tuple(&[t0, t1]));
    let opt = |t: Option<&str>| t.map_or(Param::Missing, |t| Param::Str(t.into()));
    params.push(("dtype_scaleA", opt(s2)));
    params.push(("dtype_scaleB", opt(s3)));
    params.push(("B", Param::Int(1)));
    let bytes = fp4_bytes([m, n, k], [Some(t0), Some(t1)], [s2, s3])?;
    model(params, ((2 * m * n * k) as f64, Some(bytes)), spec("matrix", Some(t0)))
}

/// aiter's batched A16 x FP4 GEMM.
fn aiter_batched_a16wfp4(a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let (b, m, k, n) = (dim(0, 0)?, dim(0, 1)?, dim(0, 2)?, dim(1, 1)?);
    let t0 = ty(0)?;
    let params = ext_params(b, m, n, k, false, tuple(&[t0, ty(1)?, "c10::bfloat16"]));
    let bytes = size(Some(t0))
        .map(|e| b as f64 * ((m * k * e) as f64 + (k * n) as f64 * 0.5 + (m * n * 2) as f64));
    model(params, ((b * 2 * m * n * k) as f64, bytes), "matrix_fp4".into())
}

/// SGLang's batched A8W8 GEMM: the batch is B's first dim.
fn sglang_batched_a8w8(a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let b = dim(1, 0)?;
    let m = if dim(0, 0)? == b { dim(0, 1)? } else { dim(0, 0)? };
    let (n, k) = (dim(1, 1)?, dim(0, 2)?);
    let (t0, t1) = (ty(0)?, ty(1)?);
    let params = ext_params(b, m, n, k, false, tuple(&[t0, t1, "c10::bfloat16"]));
    let bytes = size(Some(t0))
        .zip(size(Some(t1)))
        .map(|(ea, eb)| (b * (m * k * ea + k * n * eb + m * n * 2)) as f64);
    model(params, ((b * 2 * m * n * k) as f64, bytes), spec("matrix", Some(t1)))
}

/// aiter's and SGLang's A16W16 GEMMs: the output dtype and bias by op.
fn a16w16(name: &str, a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let (m, k, n) = (dim(0, 0)?, dim(0, 1)?, dim(1, 0)?);
    let (t0, t1) = (ty(0)?, ty(1)?);
    let (out, bias) = match name {
        "aiter::gemm_a16w16" => {
            (t0, a.dims.len() > 2 && a.dims_of(2).is_some_and(|d| !d.is_empty()))
        }
        "aiter::_gemm_a16w16_asm" => {
            let t2 = ty(2).filter(|t| a.types.len() > 2 && bpe(t).is_some());
            (t2.unwrap_or(t0), false)
        }
        _ => (if a.types.len() > 3 { ty(3)? } else { "c10::bfloat16" }, false),
    };
    let params = ext_params(1, m, n, k, bias, tuple(&[t0, t1, out]));
    let e0 = f(size(Some(t0)));
    let sizes = [e0, f(size(Some(t1))), f(size(Some(out))), e0];
    model(params, base(m, n, k, bias, sizes), spec("matrix", Some(t0)))
}

/// aiter's FP4 x FP4 GEMM.
fn aiter_afp4wfp4(a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let (m, k, n) = (dim(0, 0)?, 2 * dim(0, 1)?, dim(1, 0)?);
    let params = ext_params(1, m, n, k, false, tuple(&[ty(0)?, ty(1)?, "c10::bfloat16"]));
    let bytes = (m * k) as f64 * 0.5 + (k * n) as f64 * 0.5 + (m * n * 2) as f64;
    model(params, ((2 * m * n * k) as f64, Some(bytes)), "matrix_fp4".into())
}

/// The A8W8 GEMMs (aiter, vLLM, SGLang), block-scaled where a scale arg follows.
fn a8w8_blockscale(a: &Args) -> Option<Model> {
    let (dim, ty) = (dims(a), types(a));
    let (m, k, n) = (dim(0, 0)?, dim(0, 1)?, dim(1, 0)?);
    let (t0, t1) = (ty(0).unwrap_or(""), ty(1).unwrap_or(""));
    let mut params = ext_params(1, m, n, k, false, tuple(&[t0, t1, "c10::bfloat16"]));
    if a.dims.len() > 3 {
        // ⌈x / block⌉, `None` for an empty or zero block.
        let blocks = |x: i128, block: Option<i128>| match block {
            Some(b) if b != 0 => Param::Int(((x + b - 1).div_euclid(b)) as i64),
            _ => Param::Missing,
        };
        params.push(("quant_scheme", Param::Str("a8w8_blockscale".into())));
        params.push(("quant_granularity", Param::Str("per_block".into())));
        let last = a.dims_of(2).and_then(|d| d.last()?.int()).map(i128::from);
        params.push(("block_k", blocks(k, last)));
        params.push(("block_n", blocks(n, dim(3, 0))));
        params.push(("scale_dtype", Param::Str(ty(2).unwrap_or("float32").into())));
    }
    params.push(("output_shape", Param::Text(format!("({m}, {n})"))));
    params.push(("output_dtype", Param::Str("c10::bfloat16".into())));
    let sizes = [f(size(Some(t0))), f(size(Some(t1))), Some(2.0), Some(0.0)];
    model(params, base(m, n, k, false, sizes), spec("matrix", Some(t0)))
}

/// The extension GEMMs' parameters (§7.4.1): the batch first.
fn ext_params(
    b: i128,
    m: i128,
    n: i128,
    k: i128,
    bias: bool,
    dtypes: Param,
) -> Vec<(&'static str, Param)> {
    vec![
        ("B", Param::Int(b as i64)),
        ("M", Param::Int(m as i64)),
        ("N", Param::Int(n as i64)),
        ("K", Param::Int(k as i64)),
        ("bias", Param::Bool(bias)),
        ("dtype_A_B", dtypes),
    ]
}

/// The GEMM base parameters (§7.4.1): M, N, K, bias, the strides, the
/// dtypes, then the batch B.
fn gemm_params(
    b: i128,
    [m, n, k]: [i128; 3],
    bias: bool,
    [stride_a, stride_b]: [Param; 2],
    dtypes: Param,
) -> Vec<(&'static str, Param)> {
    vec![
        ("M", Param::Int(m as i64)),
        ("N", Param::Int(n as i64)),
        ("K", Param::Int(k as i64)),
        ("bias", Param::Bool(bias)),
        ("stride_A", stride_a),
        ("stride_B", stride_b),
        ("dtype_A_B", dtypes),
        ("B", Param::Int(b as i64)),
    ]
}

fn py(s: &str) -> String {
    crate::parse::py_str_repr(s)
}

/// The unary element-wise ops modelled (`core.aten_unary_elementwise`).
const UNARY_OPS: [&str; 27] = [
    "aiter::silu_and_mul",
    "_C::silu_and_mul",
    "sgl_kernel::silu_and_mul",
    "aiter::gelu_and_mul",
    "aiter::gelu_tanh_and_mul",
    "aten::replication_pad1d",
    "aten::replication_pad2d",
    "aten::replication_pad3d",
    "aten::upsample_nearest1d",
    "aten::upsample_nearest2d",
    "aten::upsample_nearest3d",
    "primus_turbo_cpp_extension::quantize_fp8_tensorwise",
    "primus_turbo::quantize_fp8_tensorwise",
    "primus_turbo_cpp_extension::quantize_mxfp4_dual",
    "primus_turbo::quantize_mxfp4_dual",
    "primus::quantize_mxfp4_dual",
    "aten::copy",
    "aten::copy_",
    "aten::clamp_min",
    "aten::clamp_min_",
    "aten::clamp_max",
    "aten::clamp_max_",
    "aten::sigmoid",
    "aten::rsqrt",
    "aten::silu",
    "aten::neg",
    "aten::pow",
];

/// The binary element-wise ops modelled (`core.aten_binary_elementwise`,
/// `core.liger_silu_mul_function`).
const BINARY_OPS: [&str; 13] = [
    "aiter::dynamic_per_token_scaled_quant",
    "aiter::dynamic_per_group_scaled_quant",
    "aiter::dynamic_per_tensor_quant",
    "vllm::triton_per_token_group_quant_fp8",
    "aten::div",
    "aten::div_",
    "aten::mul",
    "aten::mul_",
    "aten::add",
    "aten::add_",
    "aten::sigmoid_backward",
    "aten::threshold_backward",
    "LigerSiLUMulFunction",
];

/// The attention ops modelled (§7.3's family 2, §7.4.3), in name order.
const SDPA_OPS: [&str; 17] = [
    "EvoformerAttention",
    "FlashAttnFunc",
    "aiter::_flash_attn_backward",
    "aiter::_flash_attn_forward",
    "aiter::fmha_v3_fwd",
    "aiter::mha_bwd",
    "aiter::mha_fwd",
    "aiter::wrapper_fmha_v3_bwd",
    "aiter::wrapper_fmha_v3_fwd",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_flash_attention",
    "flash_attn::_flash_attn_backward",
    "flash_attn::_flash_attn_forward",
    "flash_attn::_flash_attn_varlen_backward",
    "flash_attn::_flash_attn_varlen_forward",
    "flash_attn_3::fwd",
];

/// The SDPA backward op whose forward-pass rows move to `SDPA_bwd` (§6.2).
const MOVED_TO_SDPA_BWD: &str = "flash_attn::_flash_attn_varlen_backward";

/// How an attention op lays its q, k and v out (§7.4.3).
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// (B, N, H, d): flash-attn's and aiter's.
    Bnhd,
    /// (B, H, N, d): PyTorch's.
    Bhnd,
    /// (N, H, d) with B = 1: the varlen ops, sequences packed.
    Varlen,
}

/// How a model reads `dropout` from `Concrete Inputs`.
#[derive(Clone, Copy)]
enum Dropout {
    /// `float(C[i])`, required.
    Float(usize),
    /// `optional_float(C[i])`: 0.0 for `""`, `None` or no number (the
    /// index itself required).
    Optional(usize),
    /// `float(C[i])` if there and not empty, else 0.0.
    FloatOr0(usize),
    /// Always 0.0.
    Zero,
}

/// How a model reads `causal` from `Concrete Inputs`.
#[derive(Clone, Copy)]
enum Causal {
    /// The Python literal `C[i]` (`True` / `False`), required.
    Literal(usize),
    /// The literal `C[i]` if there and not empty, else True.
    LiteralOrTrue(usize),
    /// `C[i].lower() == "true"` (`""` and `None`: False), the index
    /// required.
    Lower(usize),
}

/// One attention op's model, as §7.4.3's table reads it.
struct Attention {
    /// Index of q in the argument lists; k and v follow it.
    q: usize,
    layout: Layout,
    /// `q_stride`, `k_stride`, `v_stride` (required).
    strides: bool,
    dropout: Dropout,
    causal: Causal,
    flash_impl: bool,
    /// `dtype_A_B` = (T0, T1); without it the spec is empty.
    dtype: bool,
    /// A backward op: its forward metrics are the backward formulas.
    backward_op: bool,
    /// The varlen ops: `Input Dims` of cu_seqlens_q and cu_seqlens_k,
    /// `Concrete Inputs` of max_seqlen_q and max_seqlen_k.
    varlen: Option<[usize; 4]>,
}

impl Attention {
    /// The model of op `name`; `None` for Evoformer (its own shape) and
    /// names not in [`SDPA_OPS`].
    fn of(name: &str) -> Option<Attention> {
        use {Causal::*, Dropout::*};
        let base = |q, layout, dropout, causal| Attention {
            q,
            layout,
            strides: false,
            dropout,
            causal,
            flash_impl: true,
            dtype: false,
            backward_op: false,
            varlen: None,
        };
        let flash = |q, dropout, causal| Attention {
            strides: true,
            dtype: true,
            ..base(q, Layout::Bnhd, dropout, causal)
        };
        let aten = |dropout, causal, flash_impl| Attention {
            flash_impl,
            dtype: true,
            ..base(0, Layout::Bhnd, dropout, causal)
        };
        let bwd = |a: Attention| Attention { backward_op: true, ..a };
        let varlen = |a: Attention, at| Attention { layout: Layout::Varlen, varlen: Some(at), ..a };
        Some(match name {
            "FlashAttnFunc" | "flash_attn::_flash_attn_forward" => flash(0, Float(3), Literal(5)),
            "flash_attn::_flash_attn_backward" => bwd(flash(1, FloatOr0(8), LiteralOrTrue(10))),
            "flash_attn::_flash_attn_varlen_forward" => {
                varlen(flash(0, Float(7), Literal(9)), [3, 4, 5, 6])
            }
            "flash_attn::_flash_attn_varlen_backward" => {
                bwd(varlen(flash(1, Float(13), Literal(15)), [9, 10, 11, 12]))
            }
            "aten::_scaled_dot_product_cudnn_attention"
            | "aten::_scaled_dot_product_efficient_attention" => aten(Optional(5), Lower(6), false),
            "aten::_scaled_dot_product_flash_attention" => aten(Optional(3), Lower(4), true),
            "aiter::_flash_attn_forward" | "aiter::mha_fwd" | "aiter::fmha_v3_fwd" => {
                base(0, Layout::Bnhd, Optional(3), Lower(5))
            }
            "aiter::_flash_attn_backward" => bwd(base(0, Layout::Bnhd, Optional(10), Lower(12))),
            "flash_attn_3::fwd" => base(0, Layout::Bnhd, Zero, Lower(24)),
            "aiter::wrapper_fmha_v3_fwd" => base(1, Layout::Bnhd, Optional(4), Lower(6)),
            "aiter::wrapper_fmha_v3_bwd" => bwd(base(1, Layout::Bnhd, Optional(7), Lower(9))),
            "aiter::mha_bwd" => bwd(base(1, Layout::Bnhd, Optional(6), Lower(8))),
            _ => return None,
        })
    }
}

/// Attention FLOPs (§7.4.3) in Python's arithmetic: integers (`i128`)
/// for shapes, `f64` where a length is a float (varlen's max_seqlen).
/// `backward`: `Some(flash_impl)` for the backward formulas. `None` where
/// causal attention has unequal lengths or no KV heads (TraceLens
/// raises).
fn sdpa_flops<T>(
    [b, n_q, h_q, n_kv, _h_kv, d_qk, d_v]: [T; 7],
    groups: Option<T>,
    causal: bool,
    backward: Option<bool>,
    float: fn(T) -> f64,
) -> Option<f64>
where
    T: Copy + PartialEq + From<i32> + Add<Output = T> + Sub<Output = T> + Mul<Output = T>,
{
    let two = T::from(2);
    let zero = T::from(0);
    let total = match backward {
        None => b * h_q * two * n_q * n_kv * d_qk + b * h_q * two * n_q * d_v * n_kv,
        Some(flash) => {
            // ⌊H_Q / H_KV⌋ - 1, Python's floor division.
            let extra = groups? - T::from(1);
            (if flash { b * h_q * two * n_q * n_kv * d_qk } else { zero })
                + (b * h_q * two * n_kv * n_q * d_v + b * n_kv * d_v * extra)
                + b * h_q * two * n_q * n_kv * d_v
                + b * h_q * two * n_q * n_kv * d_qk
                + (b * h_q * two * n_kv * n_q * d_qk + b * n_kv * d_qk * extra)
        }
    };
    match causal {
        true if n_q != n_kv => None,
        true => Some(float(total) / 2.0),
        false => Some(float(total)),
    }
}

/// The attention models (§7.4.3): q, k, v read in the op's layout; two
/// matmuls' FLOPs (halved when causal), q, k, v and the output read or
/// written once at 2 bytes. `backward`: the figures of the op's backward
/// pass (§6.3's backward mode: `SDPA_bwd`); a backward op gives those in
/// either mode.
fn sdpa(name: &str, a: &Args, backward: bool) -> Option<Model> {
    if name == "EvoformerAttention" {
        return evoformer(a, backward);
    }
    let m = Attention::of(name)?;
    let concrete = a.concrete.as_deref();
    // (B, H, N, d) of input `i`, read at the layout's indices.
    let shape = |i: usize| -> Option<[i128; 4]> {
        let d = a.dims_of(i)?;
        let at = |j: usize| d.get(j).and_then(Py::int).map(i128::from);
        Some(match m.layout {
            Layout::Bnhd => [at(0)?, at(2)?, at(1)?, at(3)?],
            Layout::Bhnd => [at(0)?, at(1)?, at(2)?, at(3)?],
            Layout::Varlen => [1, at(1)?, at(0)?, at(2)?],
        })
    };
    let (q, k, v) = (shape(m.q)?, shape(m.q + 1)?, shape(m.q + 2)?);
    let [b, h_q, n_q, d_qk] = q;
    let (h_kv, n_kv, d_v) = (k[1], k[2], v[3]);
    // extract_sdpa_cfg's checks (varlen has no batch to compare).
    if (m.layout != Layout::Varlen && (k[0] != b || v[0] != b))
        || k[1] != v[1]
        || k[2] != v[2]
        || k[3] != d_qk
    {
        return None;
    }
    // Concrete input `i`, the index required.
    let text = |i: usize| concrete.and_then(|c| c.get(i)).and_then(Py::str);
    let literal = |t: &str| match t.trim() {
        "True" => Some(true),
        "False" => Some(false),
        _ => None,
    };
    let dropout = match m.dropout {
        Dropout::Float(i) => text(i)?.trim().parse::<f64>().ok()?,
        Dropout::Optional(i) => text(i)?.trim().parse::<f64>().unwrap_or(0.0),
        Dropout::FloatOr0(i) => match text(i).filter(|t| !t.is_empty()) {
            Some(t) => t.trim().parse::<f64>().ok()?,
            None => 0.0,
        },
        Dropout::Zero => 0.0,
    };
    let causal = match m.causal {
        Causal::Literal(i) => literal(text(i)?)?,
        Causal::LiteralOrTrue(i) => match text(i).filter(|t| !t.is_empty()) {
            Some(t) => literal(t)?,
            None => true,
        },
        Causal::Lower(i) => {
            let t = text(i)?;
            t != "None" && t.eq_ignore_ascii_case("true")
        }
    };
    let int = |x: i128| Param::Int(x as i64);
    let mut params = vec![
        ("B", int(b)),
        ("N_Q", int(n_q)),
        ("H_Q", int(h_q)),
        ("N_KV", int(n_kv)),
        ("H_KV", int(h_kv)),
        ("d_h_qk", int(d_qk)),
        ("d_h_v", int(d_v)),
    ];
    if m.strides {
        let strides = a.strides.as_deref()?;
        for (i, key) in ["q_stride", "k_stride", "v_stride"].into_iter().enumerate() {
            params.push((key, Param::Text(strides.get(m.q + i)?.repr(true))));
        }
    }
    params.extend([
        ("dropout", Param::Text(crate::csv::py_float(dropout))),
        ("causal", Param::Bool(causal)),
        ("flash_impl", Param::Bool(m.flash_impl)),
    ]);
    let (t0, t1) = (a.dtype(0), a.dtype(1));
    if m.dtype {
        params.push(("dtype_A_B", Param::Text(format!("({}, {})", py(t0?), py(t1?)))));
    }
    let backward_formulas = backward || m.backward_op;
    let mode = backward_formulas.then_some(m.flash_impl);
    let f = |x: i128| x as f64;
    let groups = floor_div(h_q, h_kv);
    let dims = [b, n_q, h_q, n_kv, h_kv, d_qk, d_v];
    let flops = match m.varlen {
        None => sdpa_flops(dims, groups, causal, mode, f)?,
        Some([cu_q, cu_kv, max_q, max_kv]) => {
            // The longest sequences, then the rest at the mean length of
            // the others (a lower bound: TraceLens' estimate).
            let seqs_q = i128::from(a.dim(cu_q, 0)?) - 1;
            let seqs_kv = i128::from(a.dim(cu_kv, 0)?) - 1;
            let max_q = text(max_q)?.trim().parse::<f64>().ok()?;
            let max_kv = text(max_kv)?.trim().parse::<f64>().ok()?;
            params.extend([
                ("num_seqs_q", int(seqs_q)),
                ("num_seqs_kv", int(seqs_kv)),
                ("max_seqlen_q", Param::Text(crate::csv::py_float(max_q))),
                ("max_seqlen_kv", Param::Text(crate::csv::py_float(max_kv))),
            ]);
            let [b, _, h_q, _, h_kv, d_qk, d_v] = dims.map(f);
            let groups = groups.map(f);
            let at = |n_q, n_kv| [b, n_q, h_q, n_kv, h_kv, d_qk, d_v];
            let mut total = sdpa_flops(at(max_q, max_kv), groups, causal, mode, |x| x)?;
            if seqs_q > 1 {
                if seqs_kv == 1 {
                    return None;
                }
                let rest_q = ((f(n_q) - max_q) / f(seqs_q - 1)).floor();
                let rest_kv = ((f(n_kv) - max_kv) / f(seqs_kv - 1)).floor();
                total +=
                    f(seqs_q - 1) * sdpa_flops(at(rest_q, rest_kv), groups, causal, mode, |x| x)?;
            }
            total
        }
    };
    // Bytes at 2 per element, but flash-attn's own backward op at its
    // first input's (`dout`'s) size.
    let e = match name {
        "flash_attn::_flash_attn_backward" => bpe(t0?)?,
        _ => 2,
    };
    let twice = i128::from(backward_formulas) + 1;
    let bytes = (twice * b * n_q * h_q * d_qk
        + twice * b * n_kv * h_kv * d_qk
        + twice * b * n_kv * h_kv * d_v
        + b * n_q * h_q * d_v)
        * e;
    let spec = if m.dtype { spec("matrix", t0) } else { String::new() };
    Some(Model { params, flops, bytes: Some(bytes as f64), spec })
}

/// AlphaFold's Evoformer attention (`core.evoformer_attention`): q of
/// (Batch, N_seq, N_res, Head, Dim), the MSA depth folded into the batch,
/// never causal, no dropout parameter; `dtype_A_B` a one-item list.
fn evoformer(a: &Args, backward: bool) -> Option<Model> {
    let q = a.dims_of(0)?;
    let [batch, seq, res, head, dim] = [0, 1, 2, 3, 4].map(|i| q.get(i).and_then(Py::int));
    if q.len() != 5 {
        return None;
    }
    let (b, n, h, d) = (
        i128::from(batch?) * i128::from(seq?),
        i128::from(res?),
        i128::from(head?),
        i128::from(dim?),
    );
    let int = |x: i128| Param::Int(x as i64);
    let t0 = a.dtype(0);
    let params = vec![
        ("B", int(b)),
        ("N_Q", int(n)),
        ("H_Q", int(h)),
        ("N_KV", int(n)),
        ("H_KV", int(h)),
        ("d_h_qk", int(d)),
        ("d_h_v", int(d)),
        ("causal", Param::Bool(false)),
        ("flash_impl", Param::Bool(false)),
        ("dtype_A_B", Param::Text(format!("[{}]", t0.map_or_else(|| "None".into(), py)))),
    ];
    let mode = backward.then_some(false);
    let flops = sdpa_flops([b, n, h, n, h, d, d], floor_div(h, h), false, mode, |x| x as f64)?;
    let twice = i128::from(backward) + 1;
    let bytes =
        (twice * b * n * h * d + twice * b * n * h * d + twice * b * n * h * d + b * n * h * d) * 2;
    Some(Model { params, flops, bytes: Some(bytes as f64), spec: spec("matrix", t0) })
}

/// The convolution ops modelled (§7.3's family 3), in the map's order.
const CONV_OPS: [&str; 6] = [
    "aten::convolution",
    "aten::convolution_backward",
    "ConvBias_",
    "ConvBiasReLU_",
    "ConvBias_Backward",
    "ConvBiasReLU_Backward",
];

/// The CONV ops whose forward-pass rows move to `CONV_bwd` (§6.2).
const CONV_BACKWARD_OPS: [&str; 3] =
    ["aten::convolution_backward", "ConvBias_Backward", "ConvBiasReLU_Backward"];

/// The convolution models (§7.4.2): `aten::convolution`'s forward FLOPs
/// and bytes, `aten::convolution_backward`'s backward ones (its rows go
/// to `CONV_bwd`).
/// `backward_pass`: the backward FLOPs and bytes of the forward op
/// (§6.3's backward mode).
fn conv(name: &str, a: &Args, backward_pass: bool) -> Option<Model> {
    match name {
        "ConvBias_" | "ConvBiasReLU_" => return conv_bias(a, backward_pass),
        // The forward's parameters, found by `Sequence number`; without
        // one the shapes are None and the FLOPs fail.
        "ConvBias_Backward" | "ConvBiasReLU_Backward" => {
            return conv_bias(a.forward.as_deref()?, true);
        }
        _ => {}
    }
    let backward_op = name == "aten::convolution_backward";
    let backward = backward_op || backward_pass;
    let o = usize::from(backward_op);
    let c = a.concrete.as_deref().unwrap_or(&[]);
    let text = |i: usize| c.get(i).and_then(Py::str);
    let (x, w) = (int_shape(a, o)?, int_shape(a, o + 1)?);
    let ndims = x.len().checked_sub(2)?;
    // `[1, 1]`: its first and last characters dropped, split on commas;
    // one value repeated over the spatial dimensions; `default` for "".
    let ints = |i: usize, default: i128| -> Option<Vec<i128>> {
        let t = text(i).unwrap_or("");
        if t.is_empty() {
            return Some(vec![default; ndims]);
        }
        let inner = t.get(1..t.len().saturating_sub(1))?;
        let v: Vec<i128> =
            inner.split(',').map(|s| s.trim().parse().ok()).collect::<Option<_>>()?;
        match v.len() {
            1 => Some(vec![v[0]; ndims]),
            _ => Some(v),
        }
    };
    let (stride, padding, dilation) = (ints(o + 3, 1)?, ints(o + 4, 0)?, ints(o + 5, 1)?);
    let transposed = match text(o + 6)? {
        "True" => true,
        "False" => false,
        _ => return None,
    };
    let output_padding = ints(o + 7, 0)?;
    let groups: i64 = text(o + 8)?.trim().parse().ok()?;
    let (t0, t1) = (a.dtype(o)?, a.dtype(o + 1)?);
    // bias: forward, three inputs (never, as Kineto records nine);
    // backward, `bias_sizes` given and not empty (`[]` printed as is).
    let (bias, bias_param) = match backward_op {
        false => (a.dims.len() == 3, Param::Bool(a.dims.len() == 3)),
        true => match a.dims.get(3) {
            None => (false, Param::Bool(false)),
            Some(Py::Seq(d)) if d.is_empty() => (false, Param::Text("[]".into())),
            Some(_) => (true, Param::Bool(true)),
        },
    };
    let c = Conv {
        x,
        w,
        dtypes: (t0, t1),
        strides: (a.lenient_stride(o), a.lenient_stride(o + 1)),
        bias,
        bias_param,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    };
    conv_figures(c, backward)
}

/// Input `i`'s shape, all integers.
fn int_shape(a: &Args, i: usize) -> Option<Vec<i128>> {
    a.dims_of(i)?.iter().map(|d| d.int().map(i128::from)).collect()
}

/// A convolution's parameters, as TraceLens' models read them (§7.4.2).
struct Conv<'a> {
    x: Vec<i128>,
    w: Vec<i128>,
    dtypes: (&'a str, &'a str),
    strides: (Param, Param),
    bias: bool,
    bias_param: Param,
    stride: Vec<i128>,
    padding: Vec<i128>,
    dilation: Vec<i128>,
    transposed: bool,
    output_padding: Vec<i128>,
    groups: i64,
}

/// apex's fused `ConvBias_` and `ConvBiasReLU_` (§7.4.2): x = D0, w = D1,
/// a bias, stride and padding one int each from C3 and C4.
fn conv_bias(a: &Args, backward: bool) -> Option<Model> {
    let (x, w) = (int_shape(a, 0)?, int_shape(a, 1)?);
    let ndims = x.len().checked_sub(2)?;
    // int(C[i]) over every spatial dimension, `default` where it is
    // empty or absent.
    let one = |i: usize, default: i128| -> Option<Vec<i128>> {
        match a.concrete.as_deref().and_then(|c| c.get(i)).and_then(Py::str) {
            None | Some("") => Some(vec![default; ndims]),
            Some(t) => Some(vec![t.trim().parse().ok()?; ndims]),
        }
    };
    let (stride, padding) = (one(3, 1)?, one(4, 0)?);
    let c = Conv {
        dtypes: (a.dtype(0)?, a.dtype(1)?),
        strides: match (a.stride(0), a.stride(1)) {
            (Some(s0), Some(s1)) => (s0, s1),
            _ => (Param::Missing, Param::Missing),
        },
        bias: true,
        bias_param: Param::Bool(true),
        stride,
        padding,
        dilation: vec![1; ndims],
        transposed: false,
        output_padding: vec![0; ndims],
        groups: 1,
        x,
        w,
    };
    conv_figures(c, backward)
}

/// The figures of a convolution (§7.4.2): forward or backward FLOPs and
/// bytes at the input's element size.
fn conv_figures(c: Conv<'_>, backward: bool) -> Option<Model> {
    let Conv { x, w, dtypes: (t0, t1), stride, padding, dilation, transposed, bias, .. } = &c;
    let (t0, t1, transposed, bias) = (*t0, *t1, *transposed, *bias);
    let convnd = match x.len() {
        3 => "conv1d",
        4 => "conv2d",
        5 => "conv3d",
        _ => return None,
    };
    let ndims = x.len() - 2;
    if t0 != t1 || w.len() < 2 || [stride, padding, dilation].iter().any(|v| v.len() < ndims) {
        return None;
    }
    let oc = if transposed { w[1] } else { w[0] };
    let mut out = vec![x[0], oc];
    for i in 0..ndims {
        let (xi, wi) = (x[i + 2], *w.get(i + 2)?);
        let (s, p, d) = (stride[i], padding[i], dilation[i]);
        out.push(match transposed {
            false => ((xi + 2 * p - d * (wi - 1) - 1) as f64 / s as f64 + 1.0).trunc() as i128,
            true => (xi - 1) * s - 2 * p + d * (wi - 1) + c.output_padding.get(i).copied()? + 1,
        });
    }
    let prod = |v: &[i128]| v.iter().product::<i128>();
    let (px, pw, pout) = (prod(x), prod(w), prod(&out));
    let e = bpe(t0);
    let (flops, bytes) = match backward {
        false => {
            let flops = 2 * prod(&w[1..]) * if transposed { px } else { pout }
                + if bias { pout } else { 0 };
            let bytes = e.map(|e| (px + pw + if bias { out[1] } else { 0 } + pout) * e);
            (flops, bytes)
        }
        true => {
            let (i, wgt) = match transposed {
                false => (2 * prod(&w[1..]) * pout, 2 * pw * out[0] * prod(&out[2..])),
                true => (2 * prod(&w[1..]) * px, 2 * pw * x[0] * prod(&x[2..])),
            };
            let flops = i + wgt + if bias { pout } else { 0 };
            let bytes = e.map(|e| 2 * (pout + pw + px) * e + if bias { pout + out[1] } else { 0 });
            (flops, bytes)
        }
    };
    let tuple = ints_repr;
    let params = vec![
        ("convNd", Param::Str(convnd.into())),
        ("input_shape", Param::Text(tuple(x))),
        ("filter_shape", Param::Text(tuple(w))),
        ("dtype_input_weight", Param::Text(format!("({}, {})", py(t0), py(t1)))),
        ("input_stride", c.strides.0.clone()),
        ("weight_stride", c.strides.1.clone()),
        ("bias", c.bias_param.clone()),
        ("stride", Param::Text(tuple(stride))),
        ("padding", Param::Text(tuple(padding))),
        ("dilation", Param::Text(tuple(dilation))),
        ("transposed_conv", Param::Bool(transposed)),
        ("output_padding", Param::Text(tuple(&c.output_padding))),
        ("groups", Param::Int(c.groups)),
    ];
    let spec = spec("matrix", Some(t0));
    Some(Model { params, flops: flops as f64, bytes: bytes.map(|b| b as f64), spec })
}

/// The normalization ops modelled (§7.4.7), forward and backward (the
/// `Normalization` sheet holds both).
const NORM_OPS: [&str; 37] = [
    "aten::batch_norm",
    "aten::native_batch_norm",
    "aten::miopen_batch_norm",
    "aten::cudnn_batch_norm",
    "aten::batch_norm_backward",
    "aten::native_batch_norm_backward",
    "aten::miopen_batch_norm_backward",
    "aten::cudnn_batch_norm_backward",
    "aten::layer_norm",
    "aten::native_layer_norm",
    "aten::miopen_layer_norm",
    "aten::cudnn_layer_norm",
    "aten::layer_norm_backward",
    "aten::native_layer_norm_backward",
    "aten::miopen_layer_norm_backward",
    "aten::cudnn_layer_norm_backward",
    "aten::group_norm",
    "aten::native_group_norm",
    "aten::miopen_group_norm",
    "aten::cudnn_group_norm",
    "aiter::_groupnorm_run",
    "aten::group_norm_backward",
    "aten::native_group_norm_backward",
    "aten::miopen_group_norm_backward",
    "aten::cudnn_group_norm_backward",
    "aten::instance_norm",
    "aten::native_instance_norm",
    "aten::miopen_instance_norm",
    "aten::cudnn_instance_norm",
    "aten::_fused_rms_norm",
    "aten::rms_norm_backward",
    "aten::native_rms_norm_backward",
    "aten::miopen_rms_norm_backward",
    "aten::cudnn_rms_norm_backward",
    "aten::_fused_rms_norm_backward",
    "primus::fused_ln_modulate",
    "primus::fused_ln_modulate_backward",
];

/// A list literal of a `Concrete Inputs` text (`[512]`, `[True, False]`).
fn literal_list(text: &str) -> Option<Vec<Py>> {
    match Py::parse(text.trim())? {
        Py::Seq(items) => Some(items),
        _ => None,
    }
}

/// The normalization models (§7.4.7).
fn norm(name: &str, a: &Args) -> Option<Model> {
    let c = a.concrete.as_deref().unwrap_or(&[]);
    let text = |i: usize| c.get(i).and_then(Py::str);
    let present = |i: usize| a.dims.get(i).is_some();
    let product = |i: usize| -> Option<i128> {
        literal_list(text(i)?)?.iter().try_fold(1i128, |n, d| Some(n * i128::from(d.int()?)))
    };
    let bools = |i: usize| -> Option<Vec<bool>> {
        literal_list(text(i)?)?
            .iter()
            .map(|b| match b {
                Py::Other(t) if t == "True" => Some(true),
                Py::Other(t) if t == "False" => Some(false),
                _ => None,
            })
            .collect()
    };
    let backward = name.ends_with("_backward");
    // (input index, C, has_bias, affine, training, output_mask).
    let (idx, channels, hb, af, tr, mask): (usize, f64, bool, bool, bool, Option<Vec<bool>>) =
        if name.contains("batch_norm") {
            if backward {
                let cudnn = name.contains("cudnn") || name.contains("miopen");
                let idx = if cudnn { 0 } else { 1 };
                let tr = !cudnn && !text(7)?.is_empty();
                let ch = a.dim(idx, 1)? as f64;
                (idx, ch, true, present(2), tr, Some(vec![present(0)]))
            } else {
                let tr = !text(5)?.is_empty();
                (0, a.dim(0, 1)? as f64, true, present(2), tr, None)
            }
        } else if name.contains("layer_norm") {
            if backward {
                let m = bools(7)?;
                let (af, hb) = (*m.get(1)?, *m.get(2)?);
                (1, product(2)? as f64, hb, af, true, Some(m))
            } else {
                (0, product(1)? as f64, present(3), present(2), true, None)
            }
        } else if name.contains("group_norm") || name == "aiter::_groupnorm_run" {
            if backward {
                // Channels per group: C / num_groups, a float.
                let groups: i128 = text(8)?.trim().parse().ok().filter(|&g| g != 0)?;
                let ch = a.dim(1, 1)? as f64 / groups as f64;
                (1, ch, true, present(5), true, Some(bools(9)?))
            } else {
                (0, a.dim(0, 1)? as f64, true, present(2), true, None)
            }
        } else if name.contains("instance_norm") {
            // `use_input_stats`: any text but "" is true.
            (0, a.dim(0, 1)? as f64, true, present(2), !text(5)?.is_empty(), None)
        } else if name.starts_with("primus::fused_ln_modulate") {
            return ln_modulate(name, a);
        } else if backward {
            // The RMSNorm backward: its own formulas below.
            (1, product(2)? as f64, false, present(4), false, Some(bools(5)?))
        } else {
            (0, product(1)? as f64, false, present(2), false, None)
        };
    let shape = a.dims_of(idx)?;
    let e_count = elements(shape)? as f64;
    let dtype = a.dtype(idx)?;
    let stride = a.strides.as_ref()?.get(idx)?;
    let e_in = bpe(dtype).map(|e| e as f64);
    let (cc, e) = (channels, e_count);
    let rms = name.contains("rms_norm");
    let (flops, bytes) = match (rms, backward) {
        (true, false) => {
            let flops = (e / cc) * (2.0 * cc + 2.0) + e * if af { 2.0 } else { 1.0 };
            (flops, e_in.map(|b| e * b + e * b + if af { cc * b } else { 0.0 }))
        }
        (true, true) => {
            let m = mask.as_deref().unwrap_or(&[]);
            let (m0, m1) =
                (m.first().copied().unwrap_or(false), m.get(1).copied().unwrap_or(false));
            let flops = if af { e } else { 0.0 }
                + e
                + if m0 { 6.0 * e } else { 0.0 }
                + if m1 && af { e + if e / cc > 1.0 { e } else { 0.0 } } else { 0.0 };
            (flops, e_in.map(|b| e * b + 2.0 * e * b + if af { 2.0 * cc * b } else { 0.0 }))
        }
        (false, false) => {
            let flops = 3.0 * cc + if tr { 3.0 * e } else { 0.0 } + 3.0 * cc + 2.0 * e;
            let w = 2.0
                + if af { 1.0 + if hb { 1.0 } else { 0.0 } } else { 0.0 }
                + if tr { 2.0 } else { 0.0 };
            (flops, e_in.map(|b| e * b + e * b + w * cc * b))
        }
        (false, true) => {
            let m0 = mask.as_ref().and_then(|m| m.first().copied()).unwrap_or(false);
            let flops = cc
                * ((if tr { 0.0 } else { 3.0 })
                    + 4.0 * (e / cc)
                    + if m0 { if tr { 5.0 * (e / cc) } else { 0.0 } } else { 2.0 * (e / cc) });
            let bytes = e_in.map(|b| {
                e * b
                    + e * b * if m0 && tr { 2.0 } else { 1.0 }
                    + if tr { cc * b } else { 0.0 }
                    + if af {
                        cc * b + if tr { cc * b * if hb { 2.0 } else { 1.0 } } else { 0.0 }
                    } else {
                        0.0
                    }
            });
            (flops, bytes)
        }
    };
    let flag = |b: bool| if b { "True" } else { "False" };
    let mut params = vec![
        ("op_shape", shape_param(shape)),
        ("dtype_in_out", Param::Text(format!("({}, None)", py(dtype)))),
        ("stride_input", Param::Text(stride.repr(true))),
        ("stride_output", Param::Missing),
        (
            "num_channels",
            // Group norm's backward divides (a float); the others count.
            match name.contains("group_norm_backward") {
                false => Param::Int(cc as i64),
                true => Param::Text(crate::csv::py_float(cc)),
            },
        ),
        ("has_bias", Param::Bool(hb)),
        ("is_affine", Param::Bool(af)),
        ("is_training", Param::Bool(tr)),
    ];
    if let Some(m) = &mask {
        let list: Vec<&str> = m.iter().map(|&b| flag(b)).collect();
        params.push(("output_mask", Param::Text(format!("[{}]", list.join(", ")))));
    }
    let spec = spec("vector", Some(dtype));
    Some(Model { params, flops, bytes, spec })
}

/// The reductions modelled (`core.aten_reduce`).
/// Primus' fused LayerNorm + modulate (§7.4.7): x of (T, B, H), H the
/// channels; the backward with its output mask all true.
fn ln_modulate(name: &str, a: &Args) -> Option<Model> {
    let x = a.dims_of(0)?;
    let [t, b, h] = [0, 1, 2].map(|i| x.get(i).and_then(Py::int).map(i128::from));
    let (t, b, h) = (t?, b?, h?);
    let n = elements(x)?;
    let dtype = a.dtype(0)?;
    let e = bpe(dtype);
    let backward = name.ends_with("_backward");
    let (flops, bytes) = match backward {
        false => (12 * n, e.map(|e| 2 * n * e + 2 * b * h * e + 2 * t * b * 4)),
        true => (15 * n, e.map(|e| 2 * n * e + 2 * b * t * 4 + n * e + 2 * b * h * e + b * h * e)),
    };
    let stride = a
        .strides
        .as_ref()
        .and_then(|s| s.first())
        .map_or(Param::Missing, |s| Param::Text(s.repr(true)));
    let mut params = vec![
        ("op_shape", shape_param(x)),
        ("dtype_in_out", Param::Text(format!("({}, None)", py(dtype)))),
        ("stride_input", stride),
        ("stride_output", Param::Missing),
        ("num_channels", Param::Int(h as i64)),
        ("has_bias", Param::Bool(true)),
        ("is_affine", Param::Bool(true)),
        ("is_training", Param::Bool(true)),
    ];
    if backward {
        params.push(("output_mask", Param::Text("[True, True, True]".into())));
    }
    let spec = spec("vector", Some(dtype));
    Some(Model { params, flops: flops as f64, bytes: bytes.map(|b| b as f64), spec })
}

const REDUCE_OPS: [&str; 13] = [
    "aten::sum",
    "aten::mean",
    "aten::max",
    "aten::min",
    "aten::norm",
    "aten::linalg_norm",
    "aten::std",
    "aten::var",
    "aten::logsumexp",
    "aten::cumsum",
    "aten::cumprod",
    "aten::amin",
    "aten::amax",
];

/// The RMSNorm extension ops (§7.4.12; sheet `RMSNorm_fwd`).
const RMS_OPS: [&str; 13] = [
    "aiter::fused_add_rmsnorm_pad_",
    "vllm::rocm_aiter_triton_add_rmsnorm_pad",
    "aiter::rms_norm",
    "aiter::rmsnorm2d_fwd_ck",
    "aiter::rmsnorm",
    "aiter::rmsnorm2d_fwd_with_add_ck",
    "aiter::add_rmsnorm",
    "aiter::rmsnorm2d_fwd_with_dynamicquant_ck",
    "vllm::rocm_aiter_rmsnorm_fp8_group_quant",
    "vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant",
    "sglang_profiler::fused_mxfp4_quant_fused_rms_mxfp4_quant",
    "aiter::_fuse_rmsnorm_fp4_quant",
    "aiter::rmsnorm_quant",
];

/// The RMSNorm extension models (§7.4.12): the RMSNorm FLOPs, (E/C)·(2C +
/// 2) + 2E over E elements of C channels, with what each op fuses (a
/// residual add, a quantization, padding).
fn rms_ext(name: &str, a: &Args) -> Option<Model> {
    // The input's index, and the index of the weight whose first entry is C.
    let (i, w) = match name {
        "aiter::rms_norm"
        | "aiter::rmsnorm2d_fwd_ck"
        | "sglang_profiler::fused_mxfp4_quant_fused_rms_mxfp4_quant"
        | "aiter::_fuse_rmsnorm_fp4_quant"
        | "vllm::rocm_aiter_rmsnorm_fp8_group_quant"
        | "aiter::fused_add_rmsnorm_pad_"
        | "vllm::rocm_aiter_triton_add_rmsnorm_pad" => (0, 1),
        "aiter::rmsnorm" => (1, 2),
        "aiter::rmsnorm2d_fwd_with_dynamicquant_ck" | "aiter::rmsnorm_quant" => (1, 3),
        "aiter::rmsnorm2d_fwd_with_add_ck" | "aiter::add_rmsnorm" => (1, 4),
        "vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant" => (0, 2),
        _ => return None,
    };
    let shape = a.dims_of(i)?;
    let dtype = a.dtype(i)?;
    let c = i128::from(a.dim(w, 0)?);
    let e_count = elements(shape)?;
    let concrete_int =
        |k: usize| -> Option<i128> { a.concrete.as_deref()?.get(k)?.str()?.trim().parse().ok() };
    let (e, cc) = (e_count as f64, c as f64);
    let m = if c != 0 { e_count.div_euclid(c) } else { return None };
    let core = (e / cc) * (2.0 * cc + 2.0) + 2.0 * e;
    let b = bpe(dtype).map(|b| b as f64);
    let mf = m as f64;
    // ⌈C / g⌉ groups of quantization scales.
    let groups = |g: i128| if g > 0 { ((c + g - 1).div_euclid(g)) as f64 } else { 1.0 };
    let (flops, bytes) = match name {
        "aiter::rms_norm" | "aiter::rmsnorm2d_fwd_ck" | "aiter::rmsnorm" => {
            (core, b.map(|b| 2.0 * e * b + cc * b))
        }
        "aiter::rmsnorm2d_fwd_with_dynamicquant_ck" => {
            (core + 2.0 * e, b.map(|b| e * b + cc * b + e + 4.0 * mf))
        }
        "aiter::rmsnorm_quant" => {
            let gs = match a.concrete.as_deref().and_then(|c| c.get(5)).and_then(Py::str) {
                Some(t) if !t.trim().is_empty() => concrete_int(5)?,
                _ => 0,
            };
            let g = if gs > 0 { gs } else { c };
            (core + 2.0 * e, b.map(|b| e * b + cc * b + e + 4.0 * mf * groups(g)))
        }
        "sglang_profiler::fused_mxfp4_quant_fused_rms_mxfp4_quant"
        | "aiter::_fuse_rmsnorm_fp4_quant" => {
            let x2 = (a.dims.len() > 3 && a.dims_of(3).is_some_and(|d| d.len() == 2))
                .then(|| a.dim(3, 1))
                .flatten()
                .map(|n| n as f64);
            let res1 = a.dims.len() > 6 && a.dims_of(6).is_some_and(|d| d.len() == 2);
            let flops = core
                + if res1 { mf * cc } else { 0.0 }
                + x2.map_or(0.0, |n2| (core * mf * n2 / e.max(1.0)).trunc())
                + 2.0 * e;
            let bytes = b.map(|b| {
                e * b
                    + cc * b
                    + 0.5 * e
                    + (e_count / 32) as f64
                    + if res1 { 2.0 * e * b } else { 0.0 }
                    + x2.map_or(0.0, |n2| 2.0 * mf * n2 * b + n2 * b)
            });
            (flops, bytes)
        }
        "vllm::rocm_aiter_rmsnorm_fp8_group_quant" => {
            let gs = concrete_int(3)?;
            (core + 2.0 * e, b.map(|b| e * b + cc * b + e + 4.0 * mf * groups(gs)))
        }
        "aiter::rmsnorm2d_fwd_with_add_ck" | "aiter::add_rmsnorm" => {
            (e + core, b.map(|b| 4.0 * e * b + cc * b))
        }
        "vllm::rocm_aiter_rmsnorm_with_add_fp8_group_quant" => {
            let gs = concrete_int(4)?;
            (core + 3.0 * e, b.map(|b| 3.0 * e * b + cc * b + e + 4.0 * mf * groups(gs)))
        }
        _ => {
            // The triton add + RMSNorm + pad: its output padded to `pad`.
            let pad = concrete_int(4)?;
            let n_out = if pad > 0 { (c + pad - 1).div_euclid(pad) * pad } else { c } as f64;
            (e + core, b.map(|b| 2.0 * e * b + cc * b + mf * n_out * b + mf * cc * b))
        }
    };
    let stride = a.lenient_stride(i);
    let params = vec![
        ("op_shape", shape_param(shape)),
        ("dtype_in_out", Param::Text(format!("({}, None)", py(dtype)))),
        ("stride_input", stride),
        ("stride_output", Param::Missing),
        ("num_channels", Param::Int(c as i64)),
        ("has_bias", Param::Bool(false)),
        ("is_affine", Param::Bool(true)),
        ("is_training", Param::Bool(false)),
    ];
    let spec = spec("vector", Some(dtype));
    Some(Model { params, flops, bytes, spec })
}

/// The custom collectives modelled (§7.4.13; sheet `CustomCollective_fwd`).
const COLLECTIVE_OPS: [&str; 9] = [
    "aiter::fused_allreduce_rmsnorm",
    "aiter::fused_allreduce_rmsnorm_",
    "_C_custom_ar::all_reduce",
    "sgl_kernel::all_reduce_reg",
    "sgl_kernel::qr_all_reduce",
    "_C_custom_ar::qr_all_reduce",
    "aiter::reduce_scatter",
    "aiter::all_gather_reg",
    "sglang::reg_all_gather_into_tensor",
];

/// The custom (non-NCCL) collective models (§7.4.13): the bytes each moves
/// (an all-reduce reads and writes its tensor, a gather or scatter its
/// input and output), no FLOPs but a fused RMSNorm's; no compute spec.
fn custom_collective(name: &str, a: &Args) -> Option<Model> {
    let shape_of = |i: usize| a.dims_of(i);
    let repr = shape_param;
    let stride = |i: usize| a.stride(i);
    let size = |t: &str| bpe(t).map(|b| b as f64);
    let (params, flops, bytes) = match name {
        "aiter::fused_allreduce_rmsnorm" | "aiter::fused_allreduce_rmsnorm_" => {
            let (i, w) = if name.ends_with('_') { (0, 2) } else { (2, 6) };
            let (shape, dtype) = (shape_of(i)?, a.dtype(i)?);
            let c = i128::from(a.dim(w, 0)?);
            let e = elements(shape)?;
            if c == 0 {
                return None;
            }
            let (ef, cf) = (e as f64, c as f64);
            let flops = ef + (e.div_euclid(c) as f64) * (2.0 * cf + 2.0) + 2.0 * ef;
            let bytes = size(dtype).map(|b| 2.0 * ef * b + cf * b + 2.0 * ef * b);
            let params = vec![
                ("op_shape", repr(shape)),
                ("dtype_in", Param::Str(dtype.into())),
                ("stride_input", stride(i)?),
                ("num_channels", Param::Int(c as i64)),
            ];
            (params, flops, bytes)
        }
        "aiter::reduce_scatter"
        | "aiter::all_gather_reg"
        | "sglang::reg_all_gather_into_tensor" => {
            // Input, output and dtype indices: SGLang's takes its output first.
            let (i, o, t) = if name.starts_with("sglang") { (1, 0, 0) } else { (1, 2, 1) };
            let (shape, out, dtype) = (shape_of(i)?, shape_of(o)?, a.dtype(t)?);
            let moved = (elements(shape)? + elements(out)?) as f64;
            let bytes = size(dtype).map(|b| moved * b);
            let params = match name.starts_with("sglang") {
                true => vec![
                    ("out_shape", repr(out)),
                    ("op_shape", repr(shape)),
                    ("dtype_in", Param::Str(dtype.into())),
                ],
                false => vec![
                    ("op_shape", repr(shape)),
                    ("out_shape", repr(out)),
                    ("dtype_in", Param::Str(dtype.into())),
                    ("stride_input", stride(1)?),
                ],
            };
            (params, 0.0, bytes)
        }
        _ => {
            let (shape, dtype) = (shape_of(1)?, a.dtype(1)?);
            let e = elements(shape)? as f64;
            let params = vec![
                ("op_shape", repr(shape)),
                ("dtype_in", Param::Str(dtype.into())),
                ("stride_input", stride(1)?),
            ];
            (params, 0.0, size(dtype).map(|b| 2.0 * e * b))
        }
    };
    Some(Model { params, flops, bytes, spec: String::new() })
}

/// The smaller families modelled (§7.4.9-§7.4.11, §7.4.4's GroupQuant
/// rows), each op with its sheet: RoPE, fused RoPE + KV-cache writes,
/// cross-entropy, the causal conv1d of Mamba, MoE dispatch and combine,
/// the MXFP4 quantizations.
const SMALL_OPS: [(&str, &str); 42] = [
    ("primus_turbo::grouped_gemm", "GroupedGEMM_fwd"),
    ("primus_turbo::grouped_gemm_impl", "GroupedGEMM_fwd"),
    ("primus_turbo_cpp_extension::grouped_gemm", "GroupedGEMM_fwd"),
    ("primus_turbo_cpp_extension::ck_grouped_gemm", "GroupedGEMM_fwd"),
    ("primus_turbo::grouped_gemm_variable_k", "GroupedGEMM_fwd"),
    ("primus_turbo::grouped_gemm_variable_k_impl", "GroupedGEMM_fwd"),
    ("primus_turbo_cpp_extension::grouped_gemm_variable_k", "GroupedGEMM_fwd"),
    ("primus_turbo_cpp_extension::ck_grouped_gemm_variable_k", "GroupedGEMM_fwd"),
    ("MambaSplitConv1dScanCombinedFn", "SSM_fwd"),
    ("sglang::store_cache", "InferenceAttention_fwd"),
    ("aiter::biased_grouped_topk_hip", "MoE_aux_fwd"),
    ("aiter::moe_sorting_fwd", "MoE_aux_fwd"),
    ("aiter::mxfp4_moe_sort_hip", "MoE_aux_fwd"),
    ("aiter::mixed_sample_outer_exponential", "elementwise_fwd"),
    ("FusedRoPEFunc", "RoPE_fwd"),
    ("aiter::rope_cached_positions_2c_fwd_impl", "RoPE_fwd"),
    ("sgl_kernel::rotary_embedding", "RoPE_fwd"),
    ("aiter::fused_qk_rope_cat_and_cache_mla", "FusedRoPE_fwd"),
    ("aiter::fused_qk_rope_concat_and_cache_mla", "FusedRoPE_fwd"),
    ("CrossEntropyFunction", "CrossEntropy_fwd"),
    ("DaoAILab::_causal_conv1d_fwd_cpp", "SSM_fwd"),
    ("MoEDispatch", "MoE_comm_fwd"),
    ("MoECombine", "MoE_comm_fwd"),
    ("sglang_profiler::fused_mxfp4_quant_fused_flatten_mxfp4_quant", "GroupQuant_fwd"),
    ("aiter::fused_dynamic_mx_quant_moe_sort_hip", "GroupQuant_fwd"),
    ("sglang_profiler::quant_dynamic_mxfp4_quant", "GroupQuant_fwd"),
    ("aiter::fused_dynamic_mxfp4_quant_moe_sort_hip", "GroupQuant_fwd"),
    ("aiter::dynamic_per_group_scaled_quant_fp4", "GroupQuant_fwd"),
    ("pseudo_op::moe_aiter_fused_1stage", "MoE_fused_fwd"),
    ("aiter::fmoe_fp8_blockscale_g1u1", "MoE_fused_fwd"),
    ("aiter::fmoe_g1u1", "MoE_fused_fwd"),
    ("aiter::moe_cktile2stages_gemm1_ck", "MoE_unfused_fwd"),
    ("aiter::moe_cktile2stages_gemm2_ck", "MoE_unfused_fwd"),
    ("aiter::ck_moe_stage1", "MoE_unfused_fwd"),
    ("aiter::ck_moe_stage2", "MoE_unfused_fwd"),
    ("sglang_profiler::fused_moe_triton_kernels_invoke_fused_moe_kernel", "MoE_unfused_fwd"),
    ("sglang_profiler::fused_moe_triton_kernels_fused_append_shared_experts", "MoE_aux_fwd"),
    ("aiter::topk_softplus", "MoE_aux_fwd"),
    ("aiter::mhc_post", "mHC_fwd"),
    ("aiter::mhc_pre_gemm_sqrsum", "mHC_fwd"),
    ("aiter::mhc_pre_big_fuse_rmsnorm", "mHC_fwd"),
    ("aiter::mhc_fused_post_pre_gemm_sqrsum", "mHC_fwd"),
];

/// Bytes per element in TraceLens' MoE table (§7.1): exact and
/// case-sensitive, unlike [`bpe`].
fn moe_bpe(dtype: &str) -> Option<f64> {
    Some(match dtype {
        "Float8_e4m3fn" | "Float8_e4m3fnuz" | "Float8_e5m2" | "Float8_e5m2fnuz" | "FP8" => 1.0,
        "c10::Float8_e4m3fn" | "c10::Float8_e4m3fnuz" => 1.0,
        "FP4" | "c10::Float4_e2m1fn_x2" => 0.5,
        "BFloat16" | "Float16" | "Half" | "c10::BFloat16" | "c10::Half" => 2.0,
        "Float32" | "Float" | "c10::Float" => 4.0,
        _ => return None,
    })
}

/// Python's floor division of integers; `None` for a zero divisor.
fn floor_div(a: i128, b: i128) -> Option<i128> {
    (b != 0).then(|| a.div_euclid(b) - i128::from(a.rem_euclid(b) != 0 && b < 0))
}

/// The experts a batch of `tokens` reaches under uniform routing (§7.4.14):
/// E·(1 − ((E − k)/E)^M); `None` for no experts (TraceLens divides by 0).
fn active_experts(experts: i128, topk: i128, tokens: i128) -> Option<f64> {
    let e = experts as f64;
    (experts != 0).then(|| e * (1.0 - ((experts - topk) as f64 / e).powf(tokens as f64)))
}

/// The MoE GEMMs and mHC's ops (§7.4.14, §7.4.11); `None` for another
/// op, `Some(None)` where the model raises.
fn moe_mhc(name: &str, a: &Args) -> Option<Option<Model>> {
    let built = match name {
        "pseudo_op::moe_aiter_fused_1stage"
        | "aiter::fmoe_fp8_blockscale_g1u1"
        | "aiter::fmoe_g1u1"
        | "aiter::moe_cktile2stages_gemm1_ck"
        | "aiter::moe_cktile2stages_gemm2_ck"
        | "aiter::ck_moe_stage1"
        | "aiter::ck_moe_stage2"
        | "sglang_profiler::fused_moe_triton_kernels_invoke_fused_moe_kernel" => moe(name, a),
        "aiter::mhc_post"
        | "aiter::mhc_pre_gemm_sqrsum"
        | "aiter::mhc_pre_big_fuse_rmsnorm"
        | "aiter::mhc_fused_post_pre_gemm_sqrsum"
        | "aiter::topk_softplus" => mhc(name, a),
        "sglang_profiler::fused_moe_triton_kernels_fused_append_shared_experts" => {
            shared_experts(a)
        }
        _ => return None,
    };
    Some(built)
}

/// The fused and unfused MoE GEMM models (§7.4.14).
fn moe(name: &str, a: &Args) -> Option<Model> {
    let dims = |i: usize| int_shape(a, i);
    let three = |i: usize| -> Option<[i128; 3]> { dims(i)?.try_into().ok() };
    let last = |i: usize| dims(i)?.last().copied();
    // w1 of (E, N·g, K_packed) and w2 of (E, hidden, inter_packed): the
    // logical inter dim scaled by the INT4 packing ratio.
    let unpacked = |w1: usize, w2: usize| -> Option<(i128, i128, i128, bool)> {
        let ([experts, n, _], [_, hidden, inter]) = (three(w1)?, three(w2)?);
        let inter = inter * floor_div(hidden, last(w1)?)?;
        Some((experts, hidden, inter, n == 2 * inter))
    };
    enum Kind {
        Fused,
        Up,
        Down,
    }
    // (kind, tokens, hidden, inter, experts, topk, gated, in, weight,
    // out (a parameter where the model has one), defaults in/w/out).
    let (kind, m, k, n, experts, topk, gated, t_in, t_w, t_out, defaults) = match name {
        "pseudo_op::moe_aiter_fused_1stage" => {
            let (e, hidden, inter, gated) = unpacked(1, 2)?;
            let (t_in, t_w) = (a.dtype(0)?, a.dtype(1)?);
            let (m, topk) = (i128::from(a.dim(0, 0)?), i128::from(a.dim(3, 1)?));
            (Kind::Fused, m, hidden, inter, e, topk, Some(gated), t_in, t_w, None, [2.0, 1.0, 0.0])
        }
        "aiter::fmoe_fp8_blockscale_g1u1" | "aiter::fmoe_g1u1" => {
            let (e, hidden, inter, gated) = unpacked(2, 3)?;
            let topk = a.concrete.as_deref()?.get(8).and_then(Py::str).filter(|t| !t.is_empty())?;
            let topk = topk.trim().parse::<i128>().ok()?;
            let (t_out, t_in, t_w) = (a.dtype(0)?, a.dtype(1)?, a.dtype(2)?);
            let m = i128::from(a.dim(0, 0)?);
            (
                Kind::Fused,
                m,
                hidden,
                inter,
                e,
                topk,
                Some(gated),
                t_in,
                t_w,
                Some(t_out),
                [1.0, 1.0, 2.0],
            )
        }
        "aiter::moe_cktile2stages_gemm1_ck" => {
            let [m, hidden] = <[i128; 2]>::try_from(dims(0)?).ok()?;
            let ([e, n, _], [_, topk, inter]) = (three(1)?, three(2)?);
            let (t_in, t_w, t_out) = (a.dtype(0)?, a.dtype(1)?, a.dtype(2)?);
            (
                Kind::Up,
                m,
                hidden,
                inter,
                e,
                topk,
                Some(n == 2 * inter),
                t_in,
                t_w,
                Some(t_out),
                [2.0, 1.0, 2.0],
            )
        }
        "aiter::moe_cktile2stages_gemm2_ck" => {
            let ([m, topk, inter], [e, hidden, _]) = (three(0)?, three(1)?);
            let (t_in, t_w, t_out) = (a.dtype(0)?, a.dtype(1)?, a.dtype(2)?);
            (Kind::Down, m, hidden, inter, e, topk, None, t_in, t_w, Some(t_out), [2.0, 1.0, 2.0])
        }
        "aiter::ck_moe_stage1" => {
            let (e, hidden, inter, gated) = unpacked(1, 2)?;
            let (m, topk) = (i128::from(a.dim(0, 0)?), i128::from(a.dim(6, 1)?));
            let (t_in, t_w) = (a.dtype(0)?, a.dtype(1)?);
            (Kind::Up, m, hidden, inter, e, topk, Some(gated), t_in, t_w, None, [2.0, 1.0, 0.0])
        }
        "aiter::ck_moe_stage2" => {
            let ([m, topk, inter], [e, hidden, _]) = (three(0)?, three(2)?);
            // The packing ratio, 1 where w1 has no shape.
            let w1 = dims(1)?;
            let ratio = match w1.last() {
                Some(&packed) => floor_div(hidden, packed)?,
                None => 1,
            };
            let (t_in, t_w) = (a.dtype(0)?, a.dtype(2)?);
            (Kind::Down, m, hidden, inter * ratio, e, topk, None, t_in, t_w, None, [2.0, 1.0, 0.0])
        }
        _ => return triton_moe(a),
    };
    let (e_in, e_w) = (moe_bpe(t_in).unwrap_or(defaults[0]), moe_bpe(t_w).unwrap_or(defaults[1]));
    let e_out = match t_out {
        Some(t) => moe_bpe(t).unwrap_or(defaults[2]),
        None => e_in,
    };
    let g = if gated == Some(true) { 2 } else { 1 };
    let act = active_experts(experts, topk, m)?;
    let f = |x: i128| x as f64;
    let (flops, bytes) = match kind {
        Kind::Fused => (
            2 * m * k * n * topk * g + 2 * m * k * n * topk + m * k * (2 * topk - 1),
            f(m * k) * e_in
                + act * f(n) * f(k) * e_w * f(g)
                + act * f(n) * f(k) * e_w
                + f(m * k) * e_out,
        ),
        Kind::Up => (
            2 * m * k * n * topk * g,
            f(m * k) * e_in + act * f(g) * f(k) * f(n) * e_w + f(m * n * topk) * e_out,
        ),
        Kind::Down => (
            2 * m * n * k * topk,
            f(m * n * topk) * e_in + act * f(n) * f(k) * e_w + f(m * k) * e_out,
        ),
    };
    let int = |x: i128| Param::Int(x as i64);
    let mut params = vec![
        ("num_tokens", int(m)),
        ("hidden_dim", int(k)),
        ("inter_dim", int(n)),
        ("num_experts", int(experts)),
        ("topk", int(topk)),
    ];
    if let Some(gated) = gated {
        params.push(("gated", Param::Bool(gated)));
    }
    params.extend([
        ("input_dtype", Param::Str(t_in.into())),
        ("weight_dtype", Param::Str(t_w.into())),
    ]);
    if let Some(t) = t_out {
        params.push(("output_dtype", Param::Str(t.into())));
    }
    // aiter's block-scaled kernels compute in FP8 whatever `fp8`/`bf16`
    // label their input.
    let precision = match name {
        "aiter::fmoe_fp8_blockscale_g1u1" | "aiter::fmoe_g1u1"
            if matches!(t_in, "fp8" | "bf16") =>
        {
            Some("fp8")
        }
        _ => prec(t_in),
    };
    let spec = precision.map_or_else(String::new, |p| format!("matrix_{p}"));
    Some(Model { params, flops: flops as f64, bytes: Some(bytes), spec })
}

/// SGLang's Triton `invoke_fused_moe_kernel` (`moe_triton_invoke_grouped_gemm`):
/// one GEMM over the routed tokens, (E, N, K) weights.
fn triton_moe(a: &Args) -> Option<Model> {
    if a.dims.len() < 9 {
        return None;
    }
    let dims = |i: usize| int_shape(a, i);
    let [e, n, k] = <[i128; 3]>::try_from(dims(1)?).ok()?;
    let [tokens, topk] = <[i128; 2]>::try_from(dims(8)?).ok()?;
    let work = tokens * topk;
    let (t_in, t_w) = (a.dtype(0)?, a.dtype(1)?);
    let t_out = a.dtype(3).filter(|t| !t.is_empty()).unwrap_or(t_in);
    let (e_in, e_w, e_out) =
        (moe_bpe(t_in).unwrap_or(2.0), moe_bpe(t_w).unwrap_or(1.0), moe_bpe(t_out).unwrap_or(2.0));
    let act = if e == 0 { 0.0 } else { active_experts(e, topk, tokens)? };
    let f = |x: i128| x as f64;
    let bytes = f(work * k) * e_in + act * f(n) * f(k) * e_w + f(work * n) * e_out;
    let int = |x: i128| Param::Int(x as i64);
    let params = vec![
        ("m_work", int(work)),
        ("num_tokens", int(tokens)),
        ("topk", int(topk)),
        ("N", int(n)),
        ("K", int(k)),
        ("num_experts", int(e)),
        ("input_dtype", Param::Str(t_in.into())),
        ("weight_dtype", Param::Str(t_w.into())),
        ("output_dtype", Param::Str(t_out.into())),
    ];
    let spec = spec("matrix", Some(t_w));
    Some(Model { params, flops: (2 * work * n * k) as f64, bytes: Some(bytes), spec })
}

/// aiter's mHC (manifold hyper-connection) ops and `topk_softplus`, which
/// shares their base (§7.4.11): M tokens, n streams of C.
fn mhc(name: &str, a: &Args) -> Option<Model> {
    let dim = |i: usize, j: usize| a.dim(i, j).map(i128::from);
    // dtype_in: the input at `i`, bf16 where the list is shorter.
    let dtype_at = |i: usize| match a.types.get(i) {
        Some(t) => t.str(),
        None => Some("c10::BFloat16"),
    };
    let int = |x: i128| Param::Int(x as i64);
    let (m, n, c, dtype) = match name {
        "aiter::mhc_post" => (dim(1, 0)?, dim(0, 1)?, dim(1, 1)?, dtype_at(1)),
        "aiter::mhc_pre_gemm_sqrsum" => (dim(2, 0)?, dim(2, 1)?, dim(2, 2)?, dtype_at(2)),
        "aiter::mhc_pre_big_fuse_rmsnorm" => (dim(2, 0)?, dim(0, 1)?, dim(2, 1)?, dtype_at(7)),
        "aiter::mhc_fused_post_pre_gemm_sqrsum" => {
            (dim(3, 0)?, dim(2, 1)?, dim(3, 1)?, dtype_at(3))
        }
        // topk_softplus(topk_weights, topk_indices, gating_output (M, E)).
        _ => (dim(2, 0)?, 1, dim(2, 1)?, dtype_at(2)),
    };
    let dtype = dtype?;
    let e = bpe(dtype);
    let mut params = vec![("M", int(m)), ("n", int(n)), ("C", int(c))];
    let mixes = 4 * m * n + 4 * m * n * n;
    let (flops, bytes, maf) = match name {
        "aiter::mhc_post" => {
            params.push(("hc3", Param::Missing));
            let bytes = e.map(|e| m * c * e + m * n * c * e + mixes + m * n * c * e);
            (2 * m * n * c * (n + 1), bytes, "vector")
        }
        "aiter::mhc_pre_gemm_sqrsum" => {
            let (hc3, k, split) = (dim(3, 0)?, dim(3, 1)?, dim(0, 0)?);
            params.extend([("hc3", int(hc3)), ("K", int(k)), ("split_k", int(split))]);
            let bytes =
                e.map(|e| m * n * c * e + hc3 * k * 4 + split * m * hc3 * 4 + split * m * 4);
            (2 * m * hc3 * k, bytes, "matrix")
        }
        "aiter::mhc_pre_big_fuse_rmsnorm" => {
            let (hc3, split) = (dim(6, 0)?, dim(3, 0)?);
            params.extend([("hc3", int(hc3)), ("split_k", int(split))]);
            let bytes = e.map(|e| m * n * c * e + split * m * hc3 * 4 + c * e + m * c * e + mixes);
            (2 * m * c * n + 5 * m * c, bytes, "vector")
        }
        "aiter::mhc_fused_post_pre_gemm_sqrsum" => {
            let (hc3, k, split) = (dim(7, 0)?, dim(7, 1)?, dim(0, 0)?);
            params.extend([("hc3", int(hc3)), ("K", int(k)), ("split_k", int(split))]);
            let bytes = e.map(|e| {
                let mnc = m * n * c * e;
                m * c * e + 3 * mnc + mixes + hc3 * k * 4 + split * m * hc3 * 4 + split * m * 4
            });
            (2 * m * n * c * (n + 1) + 2 * m * hc3 * k, bytes, "matrix")
        }
        _ => {
            let topk = dim(0, 1)?;
            params.extend([("E", int(c)), ("topk", int(topk))]);
            let bytes = e.map(|e| m * c * e + c * 4 + m * topk * 4 + m * topk * 4);
            (6 * m * c, bytes, "vector")
        }
    };
    params.push(("dtype_in", Param::Str(dtype.into())));
    let spec = spec(maf, Some(dtype));
    Some(Model { params, flops: flops as f64, bytes: bytes.map(|b| b as f64), spec })
}

/// SGLang's `fused_append_shared_experts` (MoE_aux): the router's ids and
/// weights read and rewritten, on the binary element-wise base.
fn shared_experts(a: &Args) -> Option<Model> {
    let ids = a.dims_of(0)?;
    let wts = a.dims_of(1).filter(|d| !d.is_empty()).unwrap_or(ids);
    let t_ids = match a.types.first() {
        Some(t) => t.str()?,
        None => "int",
    };
    let t_wts = match a.types.get(1) {
        Some(t) => t.str()?,
        None => "float",
    };
    let ints =
        |d: &[Py]| -> Option<Vec<i128>> { d.iter().map(|x| x.int().map(i128::from)).collect() };
    let (d1, d2) = (ints(ids)?, ints(wts)?);
    // The base model's broadcast check.
    let rank = d1.len().max(d2.len());
    let at = |d: &[i128], i: usize| if i < rank - d.len() { 1 } else { d[i - (rank - d.len())] };
    if (0..rank).any(|i| {
        let (x, y) = (at(&d1, i), at(&d2, i));
        x != y && x != 1 && y != 1
    }) {
        return None;
    }
    let (n1, n2) = (d1.iter().product::<i128>(), d2.iter().product::<i128>());
    let bytes = 2 * (n1 * bpe(t_ids).unwrap_or(4) + n2 * bpe(t_wts).unwrap_or(4));
    let params = vec![
        ("shape_in1", shape_param(ids)),
        ("shape_in2", shape_param(wts)),
        (
            "dtype_in1_in2_out",
            Param::Text(format!("({}, {}, {})", py(t_ids), py(t_wts), py(t_wts))),
        ),
        ("stride_input1", Param::Missing),
        ("stride_input2", Param::Missing),
        ("stride_output", Param::Missing),
    ];
    let spec = spec("vector", Some(t_wts));
    Some(Model { params, flops: n1 as f64, bytes: Some(bytes as f64), spec })
}

/// The inference-attention ops (§7.3's family 4), in the map's order.
const INFERENCE_OPS: [&str; 16] = [
    "vllm::unified_attention_with_output",
    "aiter::mha_varlen_fwd",
    "aiter::fmha_v3_varlen_fwd",
    "aiter::mha_batch_prefill",
    "sglang_profiler::attention_paged_attention_ragged",
    "pseudo_mla_decode_fwd",
    "pseudo_mla_prefill_fwd",
    "aiter::pa_decode_gluon",
    "pseudo_v4_paged_decode_swa",
    "pseudo_v4_paged_decode_csa",
    "pseudo_v4_paged_decode_hca",
    "aiter::pa_sparse_prefill_opus_fwd",
    "sglang_profiler::tilelang_kernel_tilelang_sparse_fwd",
    "vllm::gdn_attention_core",
    "aiter::linear_attention_with_output_base",
    "sglang::store_cache",
];

/// The ops that get an iteration annotation (§1.1 step 2): names that
/// start with this.
const ANNOTATED: &str = "vllm::unified_attention_with_output";

/// The inference-attention models (§7.4.15). Every model but SGLang's
/// cache store and aiter's sparse prefill reads an iteration annotation,
/// which only vLLM's unified attention gets: the others have no FLOPs (a
/// failed row); the gated-delta ops raise `NotImplementedError` without
/// one.
fn inference(name: &str, a: &Args) -> Eval {
    let model = match name {
        "sglang::store_cache" => small(name, a, false),
        "vllm::gdn_attention_core" | "aiter::linear_attention_with_output_base" => {
            return Eval::NotImplemented;
        }
        "aiter::pa_sparse_prefill_opus_fwd" => sparse_prefill(a),
        ANNOTATED => return unified_attention(a),
        _ => None,
    };
    model.map_or(Eval::Failed, Eval::Model)
}

/// An iteration annotation's context and generation aggregates, `[c_sq,
/// c_sk, c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk]`, from the detailed
/// forms of vLLM, SGLang and ATOM (§7.4.15); `None` for any other text
/// (the native forms carry no sq·sk sums).
fn iteration_stats(text: &str) -> Option<[i128; 8]> {
    vllm_stats(text).or_else(|| sglang_stats(text)).or_else(|| atom_stats(text))
}

/// The leading ASCII digits of `s` and the rest.
fn digits(s: &str) -> Option<(i128, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    // Python's int() of a digit run too long for i128 is still a number;
    // such a run makes no sense as a token count: no model.
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// `execute_<n>_context_<c>(sq<a>sk<b>sqsq<c>sqsk<d>)_generation_<g>(…)`.
fn vllm_stats(text: &str) -> Option<[i128; 8]> {
    let rest = text.strip_prefix("execute_")?;
    let (_, rest) = digits(rest)?;
    let rest = rest.strip_prefix("_context_")?;
    let (_, rest) = digits(rest)?;
    let mut out = [0i128; 8];
    let mut rest = rest;
    for (half, next) in [(0, "_generation_"), (4, "")] {
        rest = rest.strip_prefix("(")?;
        for (i, key) in ["sq", "sk", "sqsq", "sqsk"].into_iter().enumerate() {
            let (v, r) = digits(rest.strip_prefix(key)?)?;
            out[half + i] = v;
            rest = r;
        }
        rest = rest.strip_prefix(")")?;
        if !next.is_empty() {
            let (_, r) = digits(rest.strip_prefix(next)?)?;
            rest = r;
        }
    }
    Some(out)
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Python's `re.findall(r"(\w+)=(<value>)", body)` as a dict (the last
/// key wins), `value` reading a value at the start of its argument.
fn key_values<'s>(
    body: &'s str,
    value: impl Fn(&'s str) -> Option<&'s str>,
) -> HashMap<&'s str, &'s str> {
    let mut out = HashMap::default();
    let mut rest = body;
    while let Some(start) = rest.find(is_word) {
        let run = &rest[start..];
        let end = run.find(|c: char| !is_word(c)).unwrap_or(run.len());
        let after = &run[end..];
        match after.strip_prefix('=').and_then(&value) {
            Some(v) => {
                out.insert(&run[..end], v);
                let used = start + end + 1 + v.len();
                rest = &rest[used..];
            }
            None => rest = after,
        }
    }
    out
}

/// Whether `text` holds `sqsq=` and a digit: a detailed annotation's mark.
fn has_sqsq(text: &str) -> bool {
    text.match_indices("sqsq=")
        .any(|(i, _)| text[i + 5..].starts_with(|c: char| c.is_ascii_digit()))
}

/// `step[EXTEND|DECODE|MIXED …]` holding `sqsq=<d>`: its `c_*` and `g_*`
/// pairs, 0 where absent.
fn sglang_stats(text: &str) -> Option<[i128; 8]> {
    let rest = text.strip_prefix("step[")?;
    let kind = ["EXTEND", "DECODE", "MIXED"].into_iter().find(|k| rest.starts_with(k))?;
    let after = &rest[kind.len()..];
    if after.chars().next().is_some_and(is_word) {
        return None;
    }
    let inside = &after[..after.find(']')?];
    if !has_sqsq(inside) {
        return None;
    }
    let body = &text[text.find('[')? + 1..text.rfind(']')?];
    let kv = key_values(body, |s| {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        (end > 0).then(|| &s[..end])
    });
    let get = |k: &str| kv.get(k).and_then(|v| v.parse::<i128>().ok()).unwrap_or(0);
    Some(["c_sq", "c_sk", "c_sqsq", "c_sqsk", "g_sq", "g_sk", "g_sqsq", "g_sqsk"].map(get))
}

/// ATOM's `prefill[… tok=T … sqsq=… sqsk=… sk=…]` (the context half) or
/// `decode[…]` (the generation half).
fn atom_stats(text: &str) -> Option<[i128; 8]> {
    let line = text.split('\n').next().unwrap_or("");
    let (phase, rest) = ["prefill", "decode"]
        .into_iter()
        .find_map(|p| Some((p, line.strip_prefix(p)?.strip_prefix('[')?)))?;
    let close = rest.rfind(']')?;
    let body = &rest[..close];
    if !has_sqsq(body) {
        return None;
    }
    let kv = key_values(body, |s| {
        // A bracketed list (with a `...+N` tail), else a run of non-spaces.
        if s.starts_with('[')
            && let Some(end) = s.find(']')
        {
            let tail = &s[end + 1..];
            let more = tail
                .strip_prefix("...+")
                .map(|t| t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()))
                .filter(|&n| n > 0)
                .map_or(0, |n| 4 + n);
            return Some(&s[..end + 1 + more]);
        }
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        (end > 0).then(|| &s[..end])
    });
    if !(kv.contains_key("sqsq") && kv.contains_key("sqsk")) {
        return None;
    }
    // Python's int(), 0 where it fails.
    let get = |k: &str| kv.get(k).and_then(|v| v.trim().parse::<i128>().ok()).unwrap_or(0);
    let half = [get("tok"), get("sk"), get("sqsq"), get("sqsk")];
    Some(match phase {
        "prefill" => [half[0], half[1], half[2], half[3], 0, 0, 0, 0],
        _ => [0, 0, 0, 0, half[0], half[1], half[2], half[3]],
    })
}

/// vLLM's unified attention over one iteration (the base model of
/// §7.4.15): q of (N_Q, H_Q, d_qk), the KV cache's last three dims (N_KV,
/// H_KV, d_v), the annotation's context and generation sums.
fn unified_attention(a: &Args) -> Eval {
    let Some(stats) = a.annotation.as_deref().and_then(iteration_stats) else {
        return Eval::Failed;
    };
    let ints = |i: usize| int_shape(a, i);
    let shapes = (|| {
        let [n_q, h_q, d_qk] = <[i128; 3]>::try_from(ints(0)?).ok()?;
        let k = ints(1)?;
        let [n_kv, h_kv, d_v] = <[i128; 3]>::try_from(k.get(k.len().checked_sub(3)?..)?).ok()?;
        let dtype_q = a.types.first()?.str()?;
        let dtype_kv = kv_dtype(a, dtype_q)?;
        Some((n_q, h_q, d_qk, n_kv, h_kv, d_v, dtype_q, dtype_kv))
    })();
    let Some((n_q, h_q, d_qk, n_kv, h_kv, d_v, dtype_q, dtype_kv)) = shapes else {
        return Eval::Failed;
    };
    let [c_sq, c_sk, c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk] = stats;
    if c_sq == 0 && g_sq == 0 {
        // TraceLens: decode needs custom annotations.
        return Eval::NotImplemented;
    }
    let ctx_qk = h_q * (2 * c_sqsk * d_qk) - h_q * c_sqsq * d_qk;
    let ctx_pv = h_q * (2 * c_sqsk * d_v) - h_q * c_sqsq * d_v;
    let flops = ctx_qk + ctx_pv + h_q * (2 * g_sqsk * d_qk) + h_q * (2 * g_sqsk * d_v);
    let e = bpe(dtype_q).unwrap_or(2);
    let e_kv = bpe(dtype_kv).unwrap_or(e);
    let fresh = |sq: i128| sq * h_q * d_qk + sq * h_q * d_v + sq * h_kv * d_qk + sq * h_kv * d_v;
    let cached = |sq: i128, sk: i128| (sk - sq) * h_kv * d_qk + (sk - sq) * h_kv * d_v;
    let bytes = (fresh(c_sq) + fresh(g_sq)) * e + (cached(c_sq, c_sk) + cached(g_sq, g_sk)) * e_kv;
    let int = |x: i128| Param::Int(x as i64);
    let mut params = inference_params(n_q, h_q, n_kv, h_kv, d_qk, d_v);
    params.extend([
        ("c_sq", int(c_sq)),
        ("c_sk", int(c_sk)),
        ("c_sqsq", int(c_sqsq)),
        ("c_sqsk", int(c_sqsk)),
        ("g_sq", int(g_sq)),
        ("g_sk", int(g_sk)),
        ("g_sqsq", int(g_sqsq)),
        ("g_sqsk", int(g_sqsk)),
        ("dtype_Q", Param::Str(dtype_q.into())),
        ("dtype_KV", Param::Str(dtype_kv.into())),
    ]);
    let spec = spec("matrix", Some(dtype_q));
    Eval::Model(Model { params, flops: flops as f64, bytes: Some(bytes as f64), spec })
}

/// The parameters every inference-attention model starts with: one
/// batch, the K and V heads those of the KV cache, no dropout, not causal.
fn inference_params(
    n_q: i128,
    h_q: i128,
    n_kv: i128,
    h_kv: i128,
    d_qk: i128,
    d_v: i128,
) -> Vec<(&'static str, Param)> {
    let int = |x: i128| Param::Int(x as i64);
    vec![
        ("B", int(1)),
        ("N_Q", int(n_q)),
        ("H_Q", int(h_q)),
        ("H_V", int(h_kv)),
        ("H_K", int(h_kv)),
        ("N_KV", int(n_kv)),
        ("H_KV", int(h_kv)),
        ("d_h_qk", int(d_qk)),
        ("d_h_v", int(d_v)),
        ("dropout", Param::Text("0.0".into())),
        ("causal", Param::Bool(false)),
        ("flash_impl", Param::Bool(true)),
    ]
}

/// The KV dtype an inference-attention model reads: the second input's,
/// or q's where there is none.
fn kv_dtype<'a>(a: &'a Args, q: &'a str) -> Option<&'a str> {
    match a.types.get(1) {
        Some(t) => t.str(),
        None => Some(q),
    }
}

/// aiter's sparse prefill (DeepSeek-V4): q of (N_Q, H_Q, d) attending the
/// `pairs` KV slots its two index lists name, one latent KV head.
fn sparse_prefill(a: &Args) -> Option<Model> {
    let q = a.dims_of(0)?;
    let [n_q, h_q, d] = [0, 1, 2].map(|i| q.get(i).and_then(Py::int).map(i128::from));
    let (n_q, h_q, d) = (n_q?, h_q?, d?);
    let pairs = i128::from(a.dim(2, 0)?) + i128::from(a.dim(5, 0)?);
    let dtype_q = a.types.first()?.str()?;
    let dtype_kv = kv_dtype(a, dtype_q)?;
    let e = bpe(dtype_q).unwrap_or(2);
    let e_kv = bpe(dtype_kv).unwrap_or(e);
    // One latent KV head (MLA), the pairs its KV length.
    let mut params = inference_params(n_q, h_q, pairs, 1, d, d);
    params.extend([
        ("prefill_pairs", Param::Int(pairs as i64)),
        ("dtype_Q", Param::Str(dtype_q.into())),
        ("dtype_KV", Param::Str(dtype_kv.into())),
    ]);
    // bf16 MFMA where the trace names no dtype.
    let spec = spec("matrix", Some(if dtype_q.is_empty() { "c10::bfloat16" } else { dtype_q }));
    let flops = pairs * h_q * 2 * (d + d);
    let bytes = 2 * n_q * h_q * d * e + pairs * d * e_kv;
    Some(Model { params, flops: flops as f64, bytes: Some(bytes as f64), spec })
}

/// Primus Turbo's grouped GEMMs (§7.4.8), compact (A of (M, K), B of
/// (G, K, N)) or zipped (lists of A's and B's), fixed or variable K.
fn grouped_gemm(name: &str, a: &Args) -> Option<Model> {
    let int = |x: i128| Param::Int(x as i64);
    let dims = |i: usize| int_shape(a, i);
    let variable_k = name.contains("variable_k");
    // Every [x, y] of positive ints in an argument, recursively.
    fn pairs(v: &Py, out: &mut Vec<(i128, i128)>) {
        let Some(items) = v.seq() else { return };
        let ints: Option<Vec<i64>> = items.iter().map(Py::int).collect();
        match ints.as_deref() {
            Some(&[x, y]) if x > 0 && y > 0 => out.push((i128::from(x), i128::from(y))),
            _ => items.iter().for_each(|i| pairs(i, out)),
        }
    }
    let positive = |i: usize| -> Option<Vec<i128>> { dims(i).filter(|d| d.iter().all(|&x| x > 0)) };
    let (d0, d1) = (positive(0).unwrap_or_default(), positive(1).unwrap_or_default());
    let (mut lhs, mut rhs) = (Vec::new(), Vec::new());
    if let (Some(a0), Some(a1)) = (a.dims.first(), a.dims.get(1)) {
        pairs(a0, &mut lhs);
        pairs(a1, &mut rhs);
    }
    let zipped = !lhs.is_empty() && lhs.len() == rhs.len();
    // (m, k, n) per group, and the group count.
    let (groups, g): (Vec<(i128, i128, i128)>, i128) = match variable_k {
        // Compact: A (M, K), B (G, K, N) or (G, N, K).
        false if d0.len() >= 2 && d1.len() == 3 => {
            let (m, k) = (d0[0], d0[1]);
            let n = if d1[1] == k {
                d1[2]
            } else if d1[2] == k {
                d1[1]
            } else {
                return None;
            };
            (vec![(m, k, n)], d1[0])
        }
        // Compact: one group, A (M, K) and B (·, N).
        true if d0.len() == 2 && d1.len() == 2 => (vec![(d0[0], d0[1], d1[1])], 1),
        // Zipped: a list of A's and a list of B's.
        _ if zipped => {
            let (k, n) = (lhs[0].1, rhs[0].1);
            let agree = lhs.iter().zip(&rhs).all(|(l, r)| match variable_k {
                false => l.1 == k && r.0 == k && r.1 == n,
                true => l.1 == r.0,
            });
            if !agree {
                return None;
            }
            let groups: Vec<_> = lhs.iter().zip(&rhs).map(|(l, r)| (l.0, l.1, r.1)).collect();
            let count = groups.len() as i128;
            (groups, count)
        }
        _ => return None,
    };
    let m: i128 = groups.iter().map(|g| g.0).sum();
    let (k, n) = (groups[0].1, groups[0].2);
    let e_in = a.dtype(0).and_then(bpe);
    let e_out = match a.types.get(1) {
        Some(_) => a.dtype(1).and_then(bpe),
        None => e_in,
    };
    let (flops, bytes) = match variable_k {
        false => {
            let bytes = (m * k + g * k * n) * e_in? + m * n * e_out?;
            ((2 * m * k * n) as f64, Some(bytes as f64))
        }
        true => {
            let flops: i128 = groups.iter().map(|(m, k, n)| 2 * m * k * n).sum();
            let bytes = e_in.zip(e_out).map(|(i, o)| {
                groups.iter().map(|(m, k, n)| (m * k + k * n) * i + m * n * o).sum::<i128>() as f64
            });
            (flops as f64, bytes)
        }
    };
    let size = |e: Option<i128>| e.map_or(Param::Missing, int);
    let mut params = vec![
        ("M", int(m)),
        ("K", int(k)),
        ("N", int(n)),
        ("G", int(g)),
        ("bpe_in", size(e_in)),
        ("bpe_out", size(e_out)),
    ];
    if variable_k {
        let listed: Vec<String> =
            groups.iter().map(|(m, k, n)| format!("(({m}, {k}), ({k}, {n}))")).collect();
        params.push(("group_pairs", Param::Text(format!("[{}]", listed.join(", ")))));
    }
    Some(Model { params, flops, bytes, spec: spec("matrix", a.dtype(0)) })
}

/// Mamba's fused scan (`MambaSplitConv1dScanCombinedFn`, §7.4.9): the
/// causal conv1d and the SSD scan over (B, T, combined) inputs.
fn mamba_scan(a: &Args) -> Option<Model> {
    let int = |x: i128| Param::Int(x as i64);
    let dims = |i: usize| int_shape(a, i);
    let text = |i: usize| a.concrete.as_deref().and_then(|c| c.get(i)).and_then(Py::str);
    let e_or_2 = |i: usize| a.dtype(i).and_then(bpe).unwrap_or(2) as f64;
    let d0 = dims(0)?;
    let [b, t, combined] = <[i128; 3]>::try_from(d0.as_slice()).ok()?;
    let d1 = dims(1)?;
    let [channels, d_conv] = <[i128; 2]>::try_from(d1.as_slice()).ok()?;
    let h = *dims(3)?.first()?;
    let or = |i: usize, default: i128| {
        text(i).and_then(|t| t.trim().parse::<i128>().ok()).filter(|&x| x != 0).unwrap_or(default)
    };
    let (c, p, g) = (or(6, 128), or(15, 64), or(16, 1));
    let d_inner = h * p;
    let rest = combined - 2 * d_inner - h;
    if g == 0 || rest <= 0 || rest % (2 * g) != 0 {
        return None;
    }
    let nn = rest / (2 * g);
    let flops = 2 * b * channels * t * d_conv
        + 2 * b * g * t * c * nn
        + 2 * b * h * t * c * p
        + 4 * b * h * t * nn * p;
    let e = e_or_2(0);
    let or_size = |i: usize, default: f64| a.dtype(i).and_then(bpe).map_or(default, |b| b as f64);
    let bytes = (b * t * combined) as f64 * e
        + (channels * d_conv) as f64 * e
        + channels as f64 * e
        + h as f64 * (or_size(3, 4.0) + or_size(4, 4.0) + or_size(5, e))
        + (b * t * d_inner) as f64 * e;
    let params = vec![
        ("B", int(b)),
        ("T", int(t)),
        ("H", int(h)),
        ("P", int(p)),
        ("G", int(g)),
        ("N", int(nn)),
        ("C", int(c)),
        ("d_inner", int(d_inner)),
        ("d_conv", int(d_conv)),
        ("conv_channels", int(channels)),
        ("combined_dim", int(combined)),
    ];
    Some(Model {
        params,
        flops: flops as f64,
        bytes: Some(bytes),
        spec: spec("matrix", a.dtype(0)),
    })
}

/// The op names of [`SMALL_OPS`] whose sheet is `sheet`.
fn small_ops(sheet: &str) -> Vec<&'static str> {
    SMALL_OPS.iter().filter(|(_, s)| *s == sheet).map(|(n, _)| *n).collect()
}

/// The models of [`SMALL_OPS`]; `backward`: the backward pass's figures,
/// which only MoE dispatch and combine have (the same as the forward's).
fn small(name: &str, a: &Args, backward: bool) -> Option<Model> {
    // Their backward figures: the forward's.
    let moe = matches!(name, "MoEDispatch" | "MoECombine" | "MambaSplitConv1dScanCombinedFn");
    if backward && !moe {
        return None;
    }
    if let Some(model) = moe_mhc(name, a) {
        return model;
    }
    if name.contains("grouped_gemm") {
        return grouped_gemm(name, a);
    }
    if name == "MambaSplitConv1dScanCombinedFn" {
        return mamba_scan(a);
    }
    let (params, flops, bytes, spec) = match name {
        "FusedRoPEFunc" => fused_rope(a),
        "aiter::rope_cached_positions_2c_fwd_impl" => rope_cached_positions(a),
        "sgl_kernel::rotary_embedding" => sgl_rotary_embedding(a),
        "aiter::fused_qk_rope_cat_and_cache_mla" | "aiter::fused_qk_rope_concat_and_cache_mla" => {
            fused_qk_rope_mla(name, a)
        }
        "CrossEntropyFunction" => cross_entropy(a),
        "DaoAILab::_causal_conv1d_fwd_cpp" => causal_conv1d(a),
        "sglang::store_cache" => store_cache(a),
        "aiter::biased_grouped_topk_hip"
        | "aiter::moe_sorting_fwd"
        | "aiter::mxfp4_moe_sort_hip" => moe_aux_operands(a),
        "aiter::mixed_sample_outer_exponential" => mixed_sample(a),
        "MoEDispatch" | "MoECombine" => moe_dispatch(a),
        _ => mxfp4_quant(name, a),
    }?;
    Some(Model { params, flops, bytes, spec })
}

/// A model's parameters, FLOPs, bytes and roofline spec.
type Figures = (Vec<(&'static str, Param)>, f64, Option<f64>, String);

/// Ints as TraceLens prints a list of them.
fn ints(v: &[i128]) -> Param {
    Param::Text(ints_repr(v))
}

/// Arg `i`'s element size, 2 where unknown (the small models' default).
fn e_or_2(a: &Args, i: usize) -> f64 {
    a.dtype(i).and_then(bpe).unwrap_or(2) as f64
}

/// The vector roofline of arg `i`'s dtype.
fn vector(a: &Args, i: usize) -> String {
    spec("vector", a.dtype(i))
}

/// Concrete arg `i`, where it is a string.
fn text(a: &Args, i: usize) -> Option<&str> {
    a.concrete.as_deref().and_then(|c| c.get(i)).and_then(Py::str)
}

fn prod(v: &[i128]) -> i128 {
    v.iter().product::<i128>()
}

/// Transformer Engine's fused RoPE: 3 FLOPs an element.
fn fused_rope(a: &Args) -> Option<Figures> {
    let d = int_shape(a, 0)?;
    let [s, b, h, hd] = <[i128; 4]>::try_from(d.as_slice()).ok()?;
    let n = prod(&d);
    let params = vec![
        ("seq_len", int(s)),
        ("batch", int(b)),
        ("heads", int(h)),
        ("head_dim", int(hd)),
        ("num_elements", int(n)),
    ];
    Some((params, 3.0 * n as f64, Some(2.0 * n as f64 * e_or_2(a, 0)), vector(a, 0)))
}

/// aiter's cached-positions RoPE over x and y.
fn rope_cached_positions(a: &Args) -> Option<Figures> {
    let (x, y) = (int_shape(a, 2)?, int_shape(a, 3)?);
    let n = prod(&x) + prod(&y);
    let params = vec![("x_shape", ints(&x)), ("y_shape", ints(&y)), ("num_elements", int(n))];
    Some((params, 3.0 * n as f64, Some(2.0 * n as f64 * e_or_2(a, 0)), vector(a, 0)))
}

/// sgl-kernel's rotary embedding: the rotated part of each head of q and k.
fn sgl_rotary_embedding(a: &Args) -> Option<Figures> {
    let (q, k) = (int_shape(a, 1)?, int_shape(a, 2)?);
    let head = match text(a, 3).filter(|t| !t.trim().is_empty()) {
        Some(t) => t.trim().parse().ok()?,
        None => *q.last()?,
    };
    let rot = match a.dims.len() > 4 {
        true => int_shape(a, 4).filter(|d| d.len() > 1).map_or(head, |d| d[1]),
        false => head,
    };
    if head == 0 {
        return None;
    }
    let n = q.first()? * (q.get(1)?.div_euclid(head) + k.get(1)?.div_euclid(head)) * rot;
    Some((
        vec![("num_elements", int(n))],
        3.0 * n as f64,
        Some(2.0 * n as f64 * e_or_2(a, 1)),
        vector(a, 1),
    ))
}

/// aiter's fused QK RoPE with the MLA cache write (`concat`: one K head).
fn fused_qk_rope_mla(name: &str, a: &Args) -> Option<Figures> {
    let d0 = int_shape(a, 0)?;
    let [t, qh, lora] = <[i128; 3]>::try_from(d0.as_slice()).ok()?;
    let pe = *int_shape(a, 1)?.get(2)?;
    let concat = name.contains("concat");
    let kh = if concat { 1 } else { *int_shape(a, 2)?.get(1)? };
    let dtype_in = a.dtype(0)?;
    let dtype_kv = a.dtype(4).filter(|t| !t.is_empty()).unwrap_or(dtype_in);
    let dtype_out = a.dtype(5).filter(|_| concat).unwrap_or(dtype_in);
    let e = bpe(dtype_in).map(|e| e as f64);
    let kv = bpe(dtype_kv).map(|e| e as f64);
    let out = bpe(dtype_out).map(|e| e as f64);
    let f = |x: i128| x as f64;
    let flops = 3.0 * f(t * qh * pe + t * kh * pe);
    let bytes = e.map(|e| {
        f(t * qh * lora + t * qh * pe) * e
            + f(t * kh * lora + t * kh * pe) * e
            + f(t * qh * (lora + pe)) * out.unwrap_or(e)
            + f(t * kh * (lora + pe)) * kv.unwrap_or(e)
    });
    let mut params = vec![
        ("T", int(t)),
        ("QH", int(qh)),
        ("KH", int(kh)),
        ("D_lora", int(lora)),
        ("D_pe", int(pe)),
        ("dtype_in", Param::Str(dtype_in.into())),
        ("dtype_kv", Param::Str(dtype_kv.into())),
    ];
    if concat {
        params.push(("dtype_out", Param::Str(dtype_out.into())));
    }
    Some((params, flops, bytes, vector(a, 0)))
}

/// Cross entropy over the logits: 5 FLOPs an element.
fn cross_entropy(a: &Args) -> Option<Figures> {
    let d = int_shape(a, 0)?;
    let (batch, vocab) = (*d.first()?, *d.last()?);
    let params =
        vec![("batch", int(batch)), ("vocab_size", int(vocab)), ("logits_shape", ints(&d))];
    let bytes = prod(&d) as f64 * e_or_2(a, 0) + (batch * 8 + batch * 4) as f64;
    Some((params, (5 * batch * vocab) as f64, Some(bytes), vector(a, 0)))
}

/// The causal 1-D convolution of Dao AI Lab's kernel.
fn causal_conv1d(a: &Args) -> Option<Figures> {
    let d = int_shape(a, 0)?;
    let [b, c, s] = <[i128; 3]>::try_from(d.as_slice()).ok()?;
    let k = *int_shape(a, 1)?.get(1)?;
    let bias = a.dims.len() > 2 && a.dims_of(2).is_some_and(|d| !d.is_empty());
    let params = vec![
        ("batch", int(b)),
        ("channels", int(c)),
        ("seq_len", int(s)),
        ("kernel_size", int(k)),
        ("has_bias", Param::Bool(bias)),
    ];
    let bytes = (2 * b * c * s + c * k + if bias { c } else { 0 }) as f64 * e_or_2(a, 0);
    let spec = spec("matrix", a.dtype(0));
    Some((params, (2 * b * c * s * k) as f64, Some(bytes), spec))
}

/// SGLang's KV-cache store: no FLOPs, its elements moved four times.
fn store_cache(a: &Args) -> Option<Figures> {
    let d = int_shape(a, 0)?;
    let n = prod(&d);
    let dtype = a.dtype(0)?;
    let params =
        vec![("op_shape", ints(&d)), ("nelems", int(n)), ("dtype", Param::Str(dtype.into()))];
    Some((params, 0.0, Some(4.0 * n as f64 * e_or_2(a, 0)), vector(a, 0)))
}

/// aiter's MoE top-k and sorting ops: every operand that is a list of ints.
fn moe_aux_operands(a: &Args) -> Option<Figures> {
    // Every operand that is a non-empty list of ints, with its dtype.
    let operands: Vec<(Vec<i128>, Option<&str>)> = (0..a.dims.len())
        .filter_map(|i| Some((int_shape(a, i).filter(|d| !d.is_empty())?, a.dtype(i))))
        .collect();
    // The first of the largest, as Python's max() picks it.
    let largest =
        operands.iter().fold(None, |best: Option<&(Vec<i128>, Option<&str>)>, o| match best {
            Some(b) if prod(&b.0) >= prod(&o.0) => Some(b),
            _ => Some(o),
        });
    let flops = largest.map_or(0, |(d, _)| prod(d)) as f64;
    let moved: i128 = operands.iter().filter_map(|(d, t)| Some(prod(d) * bpe((*t)?)?)).sum();
    let listed: Vec<String> = operands
        .iter()
        .map(|(d, t)| {
            let shape = ints_repr(d);
            format!("({shape}, {})", t.map_or_else(|| "None".into(), py))
        })
        .collect();

    let params = vec![("operands", Param::Text(format!("[{}]", listed.join(", "))))];
    let spec = spec("vector", largest.and_then(|(_, t)| *t));
    Some((params, flops, (moved != 0).then_some(moved as f64), spec))
}

/// aiter's sampling with outer exponential noise.
fn mixed_sample(a: &Args) -> Option<Figures> {
    let (t, v) = (a.dim(1, 0).map_or(1, i128::from), a.dim(1, 1).map_or(1, i128::from));
    let logits = a.dtype(1).unwrap_or("c10::bfloat16");
    let noise = a.dtype(2).unwrap_or("float");
    let bytes = bpe(logits).zip(bpe(noise)).map(|(l, n)| (t * v * l + t * v * n + 4 * t) as f64);
    let params = vec![
        ("T", int(t)),
        ("V", int(v)),
        ("dtype_logits", Param::Str(logits.into())),
        ("dtype_noise", Param::Str(noise.into())),
    ];
    let spec = spec("vector", Some(logits));
    Some((params, (2 * t * v) as f64, bytes, spec))
}

/// MoE dispatch and combine: their tokens moved, no FLOPs.
fn moe_dispatch(a: &Args) -> Option<Figures> {
    let d = a.dims_of(0)?;
    let tokens = i128::from(d.first()?.int()?);
    let hidden = d.get(1).and_then(Py::int).map(i128::from);
    let size = a.dtype(0).filter(|t| !t.is_empty()).and_then(bpe);
    let bytes = hidden.zip(size).map(|(h, e)| (tokens * h * e) as f64);
    let params = vec![
        ("num_tokens", int(tokens)),
        ("hidden_dim", hidden.map_or(Param::Missing, int)),
        ("bpe", size.map_or(Param::Missing, int)),
    ];
    Some((params, 0.0, bytes, String::new()))
}

/// The MXFP4 quantizations: the input read, half a byte per element and a scale per 32 written.
fn mxfp4_quant(name: &str, a: &Args) -> Option<Figures> {
    // The MXFP4 quantizations: the input read, half a byte per
    // element and a scale per 32 written.
    let i = match name {
        "aiter::fused_dynamic_mx_quant_moe_sort_hip"
        | "aiter::fused_dynamic_mxfp4_quant_moe_sort_hip" => 2,
        "aiter::dynamic_per_group_scaled_quant_fp4" => 1,
        _ => 0,
    };
    let shape = a.dims_of(i)?;
    let dtype = a.dtype(i)?;
    let n = elements(shape)?;
    let stride = match name {
        "sglang_profiler::quant_dynamic_mxfp4_quant" => Param::Missing,
        _ => a.lenient_stride(i),
    };
    let bytes = bpe(dtype).map(|e| (n * e) as f64 + 0.5 * n as f64 + (n / 32) as f64);
    let params = vec![
        ("op_shape", shape_param(shape)),
        ("dtype_in_out", Param::Text(format!("({}, {})", py(dtype), py(dtype)))),
        ("stride_input", stride),
        ("stride_output", Param::Missing),
    ];
    Some((params, 2.0 * n as f64, bytes, vector(a, i)))
}

/// The reduction model (§7.4.6): its input read, its output written (one
/// element: Kineto's `Concrete Inputs` never give the dims), as many FLOPs
/// as input elements; forward and backward alike.
fn reduce(name: &str, a: &Args) -> Option<Model> {
    let Some(shape) = a.dims_of(0) else {
        // No input shape: a row of zeros, without a reduce type.
        let params = vec![
            ("num_input_elems", Param::Int(0)),
            ("num_output_elems", Param::Int(0)),
            ("dtype_in_out", Param::Text("(None, None)".into())),
        ];
        return Some(Model { params, flops: 0.0, bytes: None, spec: String::new() });
    };
    let n_in = elements(shape)?;
    let n_out = if name.contains("cumsum") || name.contains("cumprod") { n_in } else { 1 };
    let dtype_in = a.dtype(0).filter(|t| !t.is_empty());
    let dtype_out = a.output_types.as_deref().and_then(|t| t.first()).and_then(Py::str);
    let e_in = dtype_in.and_then(bpe);
    let e_out = match dtype_out {
        Some(t) => bpe(t),
        None => e_in,
    };
    let bytes = e_in.zip(e_out).map(|(i, o)| (n_in * i + n_out * o) as f64);
    let reduce_type =
        ["mean", "max", "min", "norm"].into_iter().find(|t| name.contains(t)).unwrap_or("sum");
    let params = vec![
        ("num_input_elems", Param::Int(n_in as i64)),
        ("num_output_elems", Param::Int(n_out as i64)),
        (
            "dtype_in_out",
            Param::Text(format!("({}, {})", dtype_repr(a.dtype(0)), dtype_repr(dtype_out))),
        ),
        ("reduce_type", Param::Str(reduce_type.into())),
    ];
    let spec = spec("vector", dtype_in);
    Some(Model { params, flops: n_in as f64, bytes, spec })
}

/// The number of elements of a shape (`prod(()) = 1`).
fn elements(shape: &[Py]) -> Option<i128> {
    shape.iter().try_fold(1i128, |n, d| Some(n * i128::from(d.int()?)))
}

/// `Some(text)` of a parameter that may be `None`.
fn opt_repr(v: Option<&Py>) -> Param {
    v.map_or(Param::Missing, |v| Param::Text(v.repr(true)))
}

/// A dtype inside a parameter tuple: its repr, or `None`.
fn dtype_repr(t: Option<&str>) -> String {
    t.map_or_else(|| "None".into(), py)
}

/// The unary element-wise model (§7.4.4): `n` elements read and written.
fn unary(name: &str, a: &Args) -> Option<Model> {
    if let Some(model) = unary_more(name, a) {
        return model;
    }
    let shape = a.dims_of(0)?;
    let strides = a.strides.as_ref()?;
    let stride_in = strides.first()?;
    let has_out = a.dims.len() > 1 && a.dims_of(1).is_some_and(|d| !d.is_empty());
    let t0 = a.dtype(0)?;
    let t1 = if has_out { Some(a.dtype(1)?) } else { None };
    let stride_out = if has_out { Some(strides.get(1)?) } else { None };
    let n = elements(shape)?;
    let e_in = bpe(t0);
    let e_out = match t1 {
        Some(t) => bpe(t),
        None => e_in,
    };
    let bytes = e_in.zip(e_out).map(|(i, o)| n * i + n * o);
    let params = vec![
        ("op_shape", shape_param(shape)),
        ("dtype_in_out", Param::Text(format!("({}, {})", py(t0), dtype_repr(t1)))),
        ("stride_input", Param::Text(stride_in.repr(true))),
        ("stride_output", opt_repr(stride_out)),
    ];
    let spec = spec("vector", Some(t0));
    Some(Model { params, flops: n as f64, bytes: bytes.map(|b| b as f64), spec })
}

/// The binary element-wise model (§7.4.5): two inputs broadcast to an
/// output.
fn binary(name: &str, a: &Args) -> Option<Model> {
    if let Some(model) = binary_more(name, a) {
        return model;
    }
    let (s1, s2) = (a.dims_of(0)?, a.dims_of(1)?);
    let strides = a.strides.as_ref()?;
    let (st1, st2) = (strides.first()?, strides.get(1)?);
    let liger = name == "LigerSiLUMulFunction";
    let has_out = !liger && a.dims.len() > 2 && a.dims_of(2).is_some_and(|d| !d.is_empty());
    let (t1, t2) = (a.dtype(0)?, a.dtype(1)?);
    let t_out = if has_out { Some(a.dtype(2)?) } else { None };
    let stride_out = if has_out { Some(strides.get(2)?) } else { None };
    let (n1, n2) = (elements(s1)?, elements(s2)?);
    // Right-aligned, the shorter padded with 1s; each pair equal or one 1.
    let (d1, d2): (Vec<i128>, Vec<i128>) = (
        s1.iter().map(|d| d.int().map(i128::from)).collect::<Option<_>>()?,
        s2.iter().map(|d| d.int().map(i128::from)).collect::<Option<_>>()?,
    );
    let rank = d1.len().max(d2.len());
    let at = |d: &[i128], i: usize| {
        let pad = rank - d.len();
        if i < pad { 1 } else { d[i - pad] }
    };
    let mut n_out = 1i128;
    for i in 0..rank {
        let (x, y) = (at(&d1, i), at(&d2, i));
        if x != y && x != 1 && y != 1 {
            return None;
        }
        n_out *= x.max(y);
    }
    let (e1, e2) = (bpe(t1), bpe(t2));
    let e_out = match t_out {
        Some(t) => bpe(t),
        None => match (e1, e2) {
            (Some(x), Some(y)) if !s1.is_empty() && !s2.is_empty() => Some(x.max(y)),
            (Some(x), Some(_)) => Some(x),
            _ => None,
        },
    };
    let bytes = match (e1, e2, e_out) {
        (Some(x), Some(y), Some(o)) => Some(n1 * x + n2 * y + n_out * o),
        _ => None,
    };
    let params = vec![
        ("shape_in1", shape_param(s1)),
        ("shape_in2", shape_param(s2)),
        (
            "dtype_in1_in2_out",
            Param::Text(format!("({}, {}, {})", py(t1), py(t2), dtype_repr(t_out))),
        ),
        ("stride_input1", Param::Text(st1.repr(true))),
        ("stride_input2", Param::Text(st2.repr(true))),
        ("stride_output", opt_repr(stride_out)),
    ];
    let spec = spec("vector", Some(t1));
    Some(Model { params, flops: n_out as f64, bytes: bytes.map(|b| b as f64), spec })
}

/// The unary family's other models (§7.4.4): the fused activation-and-
/// multiply ops of aiter, vLLM and SGLang, padding and nearest upsampling,
/// Primus Turbo's quantizations. `None` for another op; `Some(None)` where
/// the model raises.
fn unary_more(name: &str, a: &Args) -> Option<Option<Model>> {
    let vector = |t: &str| spec("vector", Some(t));
    let tuple = shape_param;
    let ints = |v: &[i128]| Param::Text(ints_repr(v));
    let stride = |i: usize| a.required_stride(i);
    let pair = |x: &str, y: &str| Param::Text(format!("({}, {})", py(x), py(y)));
    let size = |t: &str| bpe(t).map(|b| b as f64);
    let built = match name {
        "aiter::silu_and_mul"
        | "_C::silu_and_mul"
        | "sgl_kernel::silu_and_mul"
        | "aiter::gelu_and_mul"
        | "aiter::gelu_tanh_and_mul" => (|| {
            let (out, t_in, t_out) = (a.dims_of(0)?, a.dtype(1)?, a.dtype(0)?);
            let n = elements(out)? as f64;
            let per = match name {
                "aiter::gelu_and_mul" => 8.0,
                "aiter::gelu_tanh_and_mul" => 10.0,
                _ => 5.0,
            };
            let bytes = size(t_in).zip(size(t_out)).map(|(i, o)| 2.0 * n * i + n * o);
            let params = vec![
                ("op_shape", tuple(out)),
                ("dtype_in_out", pair(t_in, t_out)),
                ("stride_input", stride(1)?),
                ("stride_output", stride(0)?),
            ];
            Some(Model { params, flops: per * n, bytes, spec: vector(t_in) })
        })(),
        n if n.starts_with("aten::replication_pad") || n.starts_with("aten::upsample_nearest") => {
            (|| {
                let input: Vec<i128> =
                    a.dims_of(0)?.iter().map(|d| d.int().map(i128::from)).collect::<Option<_>>()?;
                let text = a.concrete.as_deref()?.get(1)?.str()?;
                let values: Vec<i128> = literal_list(text)?
                    .iter()
                    .map(|v| v.int().map(i128::from))
                    .collect::<Option<_>>()?;
                let pad = name.starts_with("aten::replication_pad");
                let output: Vec<i128> = match pad {
                    true => {
                        let mut out = input.clone();
                        for (i, p) in values.chunks(2).enumerate() {
                            let d = out.len().checked_sub(1 + i)?;
                            out[d] += p.iter().sum::<i128>();
                        }
                        out
                    }
                    false => input.iter().take(2).copied().chain(values.iter().copied()).collect(),
                };
                let t0 = a.dtype(0)?;
                let (n_in, n_out) =
                    (input.iter().product::<i128>(), output.iter().product::<i128>());
                let bytes = size(t0).map(|e| n_in as f64 * e + n_out as f64 * e);
                let mut params =
                    vec![("input_shape", ints(&input)), ("output_shape", ints(&output))];
                if pad {
                    params.push(("padding", ints(&values)));
                }
                params.extend([
                    ("op_shape", ints(&output)),
                    ("dtype_in_out", pair(t0, t0)),
                    ("stride_input", stride(0)?),
                    ("stride_output", Param::Missing),
                ]);
                Some(Model { params, flops: n_out as f64, bytes, spec: vector(t0) })
            })()
        }
        "primus_turbo_cpp_extension::quantize_fp8_tensorwise"
        | "primus_turbo::quantize_fp8_tensorwise"
        | "primus_turbo_cpp_extension::quantize_mxfp4_dual"
        | "primus_turbo::quantize_mxfp4_dual"
        | "primus::quantize_mxfp4_dual" => (|| {
            let shape = a.dims_of(0)?;
            let t0 = a.dtype(0)?;
            let n = elements(shape)?;
            let fp4 = name.ends_with("mxfp4_dual");
            let (out, flops, bytes) = match fp4 {
                false => {
                    ("c10::Float8_e4m3fnuz", n as f64, size(t0).map(|e| n as f64 * e + n as f64))
                }
                true => {
                    let [m, cols] = [0, 1].map(|j| shape.get(j).and_then(Py::int).map(i128::from));
                    if shape.len() != 2 {
                        return None;
                    }
                    let (m, c) = (m?, cols?);
                    let bytes = size(t0).map(|e| {
                        (m * c) as f64 * e
                            + (2 * ((m * c + 1) / 2)) as f64
                            + (m * ((c + 31) / 32)) as f64
                            + (c * ((m + 31) / 32)) as f64
                    });
                    ("c10::Float4_e2m1fn_x2", (m * c) as f64, bytes)
                }
            };
            let params = vec![
                ("op_shape", tuple(shape)),
                ("dtype_in_out", pair(t0, out)),
                ("stride_input", a.lenient_stride(0)),
                ("stride_output", Param::Missing),
            ];
            Some(Model { params, flops, bytes, spec: vector(t0) })
        })(),
        _ => return None,
    };
    Some(built)
}

/// The binary family's other models (§7.4.5): aiter's per-token, per-group
/// and per-tensor quantizations and vLLM's Triton per-token-group FP8
/// quantization. `None` for another op.
fn binary_more(name: &str, a: &Args) -> Option<Option<Model>> {
    let vector = |t: &str| spec("vector", Some(t));
    let tuple = shape_param;
    let stride = |i: usize| a.required_stride(i);
    let built = match name {
        "aiter::dynamic_per_token_scaled_quant"
        | "aiter::dynamic_per_group_scaled_quant"
        | "aiter::dynamic_per_tensor_quant" => (|| {
            let (out, in1, in2) = (a.dims_of(0)?, a.dims_of(1)?, a.dims_of(2)?);
            let (t0, t1, t2) = (a.dtype(0)?, a.dtype(1)?, a.dtype(2)?);
            let n = |d: &[Py]| elements(d).map(|n| n as f64);
            let bytes =
                n(out)? * bpe(t0)? as f64 + n(in1)? * bpe(t1)? as f64 + n(in2)? * bpe(t2)? as f64;
            let params = vec![
                ("shape_in1", tuple(in1)),
                ("shape_in2", tuple(in2)),
                ("shape_out", tuple(out)),
                ("dtype_in1_in2_out", Param::Text(format!("({}, {}, {})", py(t1), py(t2), py(t0)))),
                ("stride_input1", stride(1)?),
                ("stride_input2", stride(2)?),
                ("stride_output", stride(0)?),
            ];
            Some(Model { params, flops: n(out)? * 2.59375, bytes: Some(bytes), spec: vector(t1) })
        })(),
        "vllm::triton_per_token_group_quant_fp8" => {
            let x = a.dims_of(0).unwrap_or(&[]);
            let dims: Vec<i128> = x.iter().filter_map(|d| d.int().map(i128::from)).collect();
            let (m, n) = match dims.as_slice() {
                [m, n, ..] => (*m, *n),
                [n] => (1, *n),
                [] => (1, 1),
            };
            let gs = a
                .concrete
                .as_deref()
                .and_then(|c| c.get(1))
                .and_then(Py::str)
                .filter(|t| !t.trim().eq_ignore_ascii_case("none"))
                .and_then(|t| t.trim().parse::<i128>().ok())
                .unwrap_or(128);
            let groups = if gs > 0 { ((n + gs - 1).div_euclid(gs)).max(1) } else { 1 };
            let dtype = a.dtype(0).unwrap_or("");
            let bytes = bpe(dtype).map(|e| (m * n * e + m * n + m * groups * 4) as f64);
            let params = vec![
                ("M", Param::Int(m as i64)),
                ("N", Param::Int(n as i64)),
                ("group_size", Param::Int(gs as i64)),
                ("num_groups", Param::Int(groups as i64)),
                ("shape_x", tuple(x)),
                ("dtype_x", Param::Str(dtype.into())),
                ("shape_in1", tuple(x)),
                ("shape_in2", Param::Text("()".into())),
                ("shape_out", tuple(x)),
                (
                    "dtype_in1_in2_out",
                    Param::Text(format!("({}, None, 'c10::float8_e4m3fn')", py(dtype))),
                ),
                ("stride_input1", Param::Missing),
                ("stride_input2", Param::Missing),
                ("stride_output", Param::Missing),
            ];
            Some(Model { params, flops: (6 * m * n) as f64, bytes, spec: vector(dtype) })
        }
        _ => return None,
    };
    Some(built)
}

/// The transpose flags a GEMM kernel's name tells (§7.4.1): rocBLAS /
/// hipBLASLt `Cijk_Alik_Bljk_...` names, cuBLAS `nvjet_..._TN` ones.
fn transpose_of(name: &str) -> Option<(Option<bool>, Option<bool>)> {
    if let Some(rest) = name.strip_prefix("nvjet") {
        let last = rest.rsplit('_').next().unwrap_or(rest);
        let mut c = last.chars();
        let (a, b) = (c.next()?, c.next()?);
        return Some((Some(a == 'T'), Some(b == 'T')));
    }
    let b = name.as_bytes();
    let lower = |s: &[u8]| s.iter().all(u8::is_ascii_lowercase);
    let found = (0..b.len().saturating_sub(13)).any(|i| {
        b[i] == b'C'
            && lower(&b[i + 1..i + 4])
            && &b[i + 4..i + 6] == b"_A"
            && lower(&b[i + 6..i + 9])
            && &b[i + 9..i + 11] == b"_B"
            && lower(&b[i + 11..i + 14])
    });
    if !found {
        return None;
    }
    let flag = |no: &str, yes: &str| {
        if name.contains(no) {
            Some(false)
        } else if name.contains(yes) {
            Some(true)
        } else {
            None
        }
    };
    Some((flag("_Ailk_", "_Alik_"), flag("_Bljk_", "_Bjlk_")))
}

/// An op's place against the roofline (§8.2): the time it would take at
/// the roofline (µs), whether that is the compute roof, and the share of
/// it the op reached (%; NaN without kernel time).
#[derive(Clone, Copy)]
pub(super) struct Roofline {
    pub(super) time: f64,
    pub(super) compute: bool,
    pub(super) pct: f64,
}

impl Roofline {
    /// An op's place against `arch`'s roofline (§8.2), given the busy
    /// time of its kernels: where the arch has its spec's peak, its bytes
    /// are known and it does work.
    pub(super) fn of(arch: Option<&crate::GpuArch>, model: &Model, time: f64) -> Option<Roofline> {
        let (arch, bytes) = arch.zip(model.bytes)?;
        let (at, compute) = arch.roofline(&model.spec, model.flops / 1e9, bytes)?;
        let pct = if time > 0.0 { (at / time) * 100.0 } else { f64::NAN };
        Some(Roofline { time: at, compute, pct })
    }
}

/// An op's `[GFLOPS, Data Moved (MB), FLOPS/Byte, TB/s, TFLOPS/s]` over
/// `time` µs of kernels (§6.3 steps 5-8, in its order of arithmetic; NaN
/// for what is undefined).
pub(super) fn rates(model: &Model, time: f64) -> [f64; 5] {
    let gflops = model.flops / 1e9;
    let tflops = if time > 0.0 { (gflops / 1e3) / (time / 1e6) } else { f64::NAN };
    let (moved, per_byte, tbs) = match model.bytes {
        Some(b) => {
            let per_byte = if b > 0.0 { (gflops * 1e9) / b } else { f64::NAN };
            let tbs = if time > 0.0 { (b / 1e12) / (time / 1e6) } else { f64::NAN };
            (b / (1024.0 * 1024.0), per_byte, tbs)
        }
        None => (f64::NAN, f64::NAN, f64::NAN),
    };
    [gflops, moved, per_byte, tbs, tflops]
}

/// The argument lists of the op at `e`, read back, and where they are.
/// Without `Input Dims` or `Input type` each model fails where it needs
/// them (a reduction still makes a row of zeros).
fn args_of(p: &Parsed, e: usize) -> (Args, crate::parse::ShapeArgs) {
    let shape = shape_of(p, e).unwrap_or_default();
    let read = |id: Option<u32>| id.and_then(|id| Py::parse(p.str(id)));
    let seq = |v: Option<Py>| match v {
        Some(Py::Seq(items)) => Some(items),
        _ => None,
    };
    let args = Args {
        dims: seq(read(shape.dims)).unwrap_or_default(),
        types: seq(read(shape.types)).unwrap_or_default(),
        strides: seq(read(shape.strides)),
        output_types: seq(read(shape.output_types)),
        concrete: seq(read(shape.concrete)),
        annotation: None,
        forward: None,
    };
    (args, shape)
}

/// A family's model: of an op's name, args and subtree GPU events.
type ModelFn<'a> = dyn Fn(&str, &Args, &[usize]) -> Option<Model> + 'a;

/// One modelled op of the trace: its row of the sheet before grouping.
struct Instance {
    event: usize,
    model: Model,
    /// Kernel Time (µs), and whether it is an integer.
    time: f64,
    time_int: bool,
    roofline: Option<Roofline>,
    labels: [Option<u32>; 3],
    args: [Option<u32>; 4],
    details: Vec<unique_args::Detail>,
}

impl Analysis<'_> {
    /// `GEMM.csv`: `None` when the trace has no GEMM op the models read.
    pub(crate) fn gemm_sheet(&self, arch: Option<&crate::GpuArch>) -> Option<Table> {
        self.sheet_of(&GEMM_OPS, arch, &|name, args, kernels| {
            let transpose =
                kernels.iter().find_map(|&k| transpose_of(self.p.str(ev(self.p, k).name)));
            gemm(name, args, transpose)
        })
    }

    /// The other sheets modelled, in TraceLens' order, those with rows:
    /// `SDPA_fwd` and `SDPA_bwd` (the aten attention ops' forward and
    /// backward passes), `CONV_fwd` and `CONV_bwd`, the single-table
    /// `BinaryElementwise`, `UnaryElementwise` and `Normalization`, and
    /// `Reduce_fwd` and `Reduce_bwd` (§6.2, §7.4.2-§7.4.7).
    pub(crate) fn perf_sheets(&self, arch: Option<&crate::GpuArch>) -> Vec<(&'static str, Table)> {
        let unary = self.sheet_of(&UNARY_OPS, arch, &|name, args, _| unary(name, args));
        let binary = self.sheet_of(&BINARY_OPS, arch, &|name, args, _| binary(name, args));
        // flash-attn's varlen backward rows move from the forward table
        // to follow the backward pass's (§6.2).
        let (sdpa_fwd, moved) =
            split_rows(self.sheet_of(&SDPA_OPS, arch, &|n, a, _| sdpa(n, a, false)), |r| {
                r[0].text() == MOVED_TO_SDPA_BWD
            });
        let sdpa_bwd = concat(
            self.pass_of(&SDPA_OPS, arch, &|name, args, _| sdpa(name, args, true), true),
            moved,
        );
        // The backward op's rows move from the forward table to CONV_bwd
        // (§6.2), each part in its order.
        let (conv_fwd, conv_bwd) =
            split_rows(self.sheet_of(&CONV_OPS, arch, &|n, a, _| conv(n, a, false)), |r| {
                CONV_BACKWARD_OPS.contains(&r[0].text().as_str())
            });
        let inference_fwd =
            self.sheet_of(&INFERENCE_OPS, arch, &|name, args, _| match inference(name, args) {
                Eval::Model(m) => Some(m),
                Eval::Failed | Eval::NotImplemented => None,
            });
        let rms = self.sheet_of(&RMS_OPS, arch, &|name, args, _| rms_ext(name, args));
        let collectives =
            self.sheet_of(&COLLECTIVE_OPS, arch, &|name, args, _| custom_collective(name, args));
        let forward =
            |sheet: &str| self.sheet_of(&small_ops(sheet), arch, &|n, a, _| small(n, a, false));
        let moe = small_ops("MoE_comm_fwd");
        let moe_bwd = self.pass_of(&moe, arch, &|n, a, _| small(n, a, true), true);
        let ssm = ["MambaSplitConv1dScanCombinedFn"];
        let ssm_bwd = self.pass_of(&ssm, arch, &|n, a, _| small(n, a, true), true);
        let norm = self.sheet_of(&NORM_OPS, arch, &|name, args, _| norm(name, args));
        let reduce_fwd = self.sheet_of(&REDUCE_OPS, arch, &|name, args, _| reduce(name, args));
        let reduce_bwd = self.pass_of(&REDUCE_OPS, arch, &|name, args, _| reduce(name, args), true);
        // In the order of TraceLens' families (§1), as PERF_SHEETS lists them.
        let sheets = [
            ("SDPA_fwd", sdpa_fwd),
            ("SDPA_bwd", sdpa_bwd),
            ("CONV_fwd", conv_fwd),
            ("CONV_bwd", conv_bwd),
            ("InferenceAttention_fwd", inference_fwd),
            ("BinaryElementwise", binary),
            ("GroupedGEMM_fwd", forward("GroupedGEMM_fwd")),
            ("MoE_comm_fwd", forward("MoE_comm_fwd")),
            ("MoE_comm_bwd", moe_bwd),
            ("SSM_fwd", forward("SSM_fwd")),
            ("SSM_bwd", ssm_bwd),
            ("RoPE_fwd", forward("RoPE_fwd")),
            ("CrossEntropy_fwd", forward("CrossEntropy_fwd")),
            ("UnaryElementwise", unary),
            ("MoE_fused_fwd", forward("MoE_fused_fwd")),
            ("MoE_unfused_fwd", forward("MoE_unfused_fwd")),
            ("MoE_aux_fwd", forward("MoE_aux_fwd")),
            ("RMSNorm_fwd", rms),
            ("elementwise_fwd", forward("elementwise_fwd")),
            ("GroupQuant_fwd", forward("GroupQuant_fwd")),
            ("FusedRoPE_fwd", forward("FusedRoPE_fwd")),
            ("CustomCollective_fwd", collectives),
            ("mHC_fwd", forward("mHC_fwd")),
            ("Normalization", norm),
            ("Reduce_fwd", reduce_fwd),
            ("Reduce_bwd", reduce_bwd),
        ];
        debug_assert!(sheets.iter().map(|(n, _)| n).eq(PERF_SHEETS[1..].iter()));
        sheets.into_iter().filter_map(|(n, t)| Some((n, t?))).collect()
    }

    /// The sheet of the events named one of `names` (§6.1), each modelled
    /// by `model` (its name, its args and its subtree's GPU events, in
    /// time order); `None` without a row.
    fn sheet_of(
        &self,
        names: &[&str],
        arch: Option<&crate::GpuArch>,
        model: &ModelFn<'_>,
    ) -> Option<Table> {
        self.pass_of(names, arch, model, false)
    }

    /// The forward pass ([`Analysis::sheet_of`]), or the backward pass
    /// (§6.2): the ops with backward events of their own, each with the
    /// GPU events under its subtree's backward events.
    fn pass_of(
        &self,
        names: &[&str],
        arch: Option<&crate::GpuArch>,
        model: &ModelFn<'_>,
        backward: bool,
    ) -> Option<Table> {
        let p = self.p;
        let ids: Vec<Option<u32>> = names.iter().map(|n| p.find(n)).collect();
        if ids.iter().all(Option::is_none) {
            return None;
        }
        // Of the modelled ops, those of these names, in file order, with
        // their subtrees' GPU events; backward, those with backward events
        // of their own.
        let modelled = self.modelled();
        let links = if backward { self.backward_links() } else { HashMap::default() };
        let picked: Vec<usize> = (0..modelled.ops.len())
            .filter(|&i| ids.contains(&Some(ev(p, modelled.ops[i]).name)))
            .filter(|&i| !backward || links.contains_key(&modelled.ops[i]))
            .collect();
        let ops: Vec<usize> = picked.iter().map(|&i| modelled.ops[i]).collect();
        if ops.is_empty() {
            return None;
        }
        let mut kernels: Vec<Vec<usize>> = match backward {
            false => picked.iter().map(|&i| modelled.kernels[i].clone()).collect(),
            true => {
                // The backward events of each op's subtree (its own and its
                // descendants'), then the GPU events under those.
                let mut slot: HashMap<usize, usize> = HashMap::default();
                for (s, &e) in ops.iter().enumerate() {
                    slot.insert(e, s);
                }
                let mut bwd: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
                for (&f, bs) in &links {
                    let mut cur = Some(f);
                    while let Some(c) = cur {
                        if let Some(&s) = slot.get(&c) {
                            bwd[s].extend(bs);
                        }
                        cur = self.parent[c];
                    }
                }
                let mut all: Vec<usize> = bwd.iter().flatten().copied().collect();
                all.sort_unstable();
                all.dedup();
                let under = self.subtree_gpu_events(&all);
                bwd.iter()
                    .map(|bs| {
                        let mut set: Vec<usize> = bs.clone();
                        set.sort_unstable();
                        set.dedup();
                        set.iter()
                            .flat_map(|b| {
                                under[all.binary_search(b).expect("listed")].iter().copied()
                            })
                            .collect()
                    })
                    .collect()
            }
        };
        let labels = unique_args::Labels::new(p);
        let mut rows: Vec<Instance> = Vec::new();
        for (s, &e) in ops.iter().enumerate() {
            let list = &mut kernels[s];
            list.sort_by(|&a, &b| self.interval(a).0.total_cmp(&self.interval(b).0));
            let (mut args, shape) = args_of(p, e);
            args.annotation = self.annotation_of(e);
            args.forward = self.conv_forward(e, true);
            let Some(model) = model(p.str(ev(p, e).name), &args, list) else { continue };
            let (time, time_int) = self.busy(list);
            let roofline = Roofline::of(arch, &model, time);
            let event = ev(p, e);
            rows.push(Instance {
                event: e,
                model,
                time,
                time_int,
                roofline,
                labels: labels.of(event.pid, event.tid),
                args: [shape.dims, shape.types, shape.strides, shape.concrete],
                details: list.iter().map(|&k| unique_args::Detail::of(p, k)).collect(),
            });
        }
        (!rows.is_empty()).then(|| sheet(p, &rows))
    }
}

/// The rows of `table` that `moved` picks, apart from the rest, each part
/// in its order: (rest, moved), `None` for an empty part.
fn split_rows(
    table: Option<Table>,
    moved: impl Fn(&[Cell]) -> bool,
) -> (Option<Table>, Option<Table>) {
    let Some(t) = table else { return (None, None) };
    let (out, kept): (Vec<_>, Vec<_>) = t.rows.into_iter().partition(|r| moved(r));
    let part =
        |rows: Vec<Vec<Cell>>| (!rows.is_empty()).then(|| Table { header: t.header.clone(), rows });
    (part(kept), part(out))
}

/// `first` followed by `then` as pandas concatenates two sheets (§6.2
/// step 4): `first`'s columns, then `then`'s new ones; a column one part
/// lacks is missing there, and where that leaves integers beside missing
/// cells (or beside floats) pandas makes the column float, so they print
/// as floats.
fn concat(first: Option<Table>, then: Option<Table>) -> Option<Table> {
    let (a, b) = match (first, then) {
        (Some(a), Some(b)) => (a, b),
        (a, b) => return a.or(b),
    };
    let mut header = a.header.clone();
    header.extend(b.header.iter().filter(|h| !a.header.contains(h)).cloned());
    let column = |t: &Table, h: &str| t.header.iter().position(|x| x == h);
    // A column of integers (as cells or, for parameters, as text).
    let ints = |t: &Table, i: usize| {
        t.rows.iter().all(|r| match &r[i] {
            Cell::Int(_) => true,
            Cell::Str(s) => s.parse::<i64>().is_ok(),
            _ => false,
        })
    };
    // A float64 column: numbers and missing cells, not all integers.
    let floats = |t: &Table, i: usize| {
        !ints(t, i)
            && t.rows.iter().all(|r| match &r[i] {
                Cell::Str(s) => s.parse::<f64>().is_ok(),
                _ => true,
            })
    };
    let mut rows = Vec::with_capacity(a.rows.len() + b.rows.len());
    for (this, other) in [(&a, &b), (&b, &a)] {
        let plan: Vec<(Option<usize>, bool)> = header
            .iter()
            .map(|h| {
                let at = column(this, h);
                let widen = at.is_some_and(|i| {
                    ints(this, i)
                        && match column(other, h) {
                            None => true,
                            Some(j) => floats(other, j),
                        }
                });
                (at, widen)
            })
            .collect();
        rows.extend(this.rows.iter().map(|r| {
            plan.iter()
                .map(|&(at, widen)| match at.map(|i| &r[i]) {
                    None => Cell::Empty,
                    Some(Cell::Int(v)) if widen => Cell::Float(*v as f64),
                    Some(Cell::Str(s)) if widen => Cell::Str(format!("{s}.0")),
                    Some(c) => c.clone(),
                })
                .collect()
        }));
    }
    Some(Table { header, rows })
}

/// The user annotations (any category holding `user_annotation`) by
/// start: (start, end, name), and the running maximum of their ends.
#[derive(Default)]
pub(crate) struct Annotations {
    spans: Vec<(f64, f64, u32)>,
    max_end: Vec<f64>,
}

/// Every event a perf model reads (any family's op name), in file order,
/// with the GPU events of its subtree: found once per trace, for all the
/// sheets.
pub(crate) struct Modelled {
    ops: Vec<usize>,
    kernels: Vec<Vec<usize>>,
}

impl Analysis<'_> {
    /// [`Modelled`], made on first use.
    /// The iteration annotation of the op at `e` (§1.1 step 2, §7.4.15):
    /// for an [`ANNOTATED`] op, the name of the first user annotation by
    /// start (ties in file order) that starts no later than the op and
    /// ends after it, or `NA`; `None` for any other op.
    fn annotation_of(&self, e: usize) -> Option<String> {
        let p = self.p;
        if !self.name(e).starts_with(ANNOTATED) {
            return None;
        }
        let spans = self.annotations.get_or_init(|| {
            let mut spans: Vec<(f64, f64, u32)> = p
                .events
                .iter()
                .filter(|x| matches!(x.cat, Cat::UserAnnotation | Cat::OtherAnnotation))
                .filter_map(|x| {
                    let (ts, dur) = (x.ts?.f(), x.dur?.f());
                    Some((ts, ts + dur, x.name))
                })
                .collect();
            // By start, ties in file order (a stable sort).
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut max_end = Vec::with_capacity(spans.len());
            let mut most = f64::NEG_INFINITY;
            for s in &spans {
                most = most.max(s.1);
                max_end.push(most);
            }
            Annotations { spans, max_end }
        });
        let op = ev(p, e);
        let (Some(ts), Some(dur)) = (op.ts.map(Num::f), op.dur.map(Num::f)) else {
            return Some("NA".into());
        };
        // Of the annotations that start no later than the op (a prefix),
        // the first that ends after it: where the running maximum of the
        // ends first passes the op's end.
        let started = spans.spans.partition_point(|s| s.0 <= ts);
        let first = spans.max_end[..started].partition_point(|&end| end <= ts + dur);
        Some(match spans.spans.get(first).filter(|_| first < started) {
            Some(&(_, _, name)) => p.str(name).to_string(),
            None => "NA".into(),
        })
    }

    /// The args of the forward a fused conv backward op at `e` reads
    /// (§7.4.2): the last `ConvBias_` / `ConvBiasReLU_` of its `Sequence
    /// number` whose parameters TraceLens could read, before `e` in the
    /// file (`before`: the sheets, processed in file order) or anywhere in
    /// it (the unified table, after every sheet); `None` for other ops.
    fn conv_forward(&self, e: usize, before: bool) -> Option<Box<Args>> {
        let p = self.p;
        if !matches!(self.name(e), "ConvBias_Backward" | "ConvBiasReLU_Backward") {
            return None;
        }
        // Each sequence number's forwards with readable parameters, in
        // file order, found once.
        let forwards = self.conv_forwards.get_or_init(|| {
            let mut by: HashMap<i64, Vec<usize>> = HashMap::default();
            for &(i, n) in &p.sequences {
                if matches!(self.name(i), "ConvBias_" | "ConvBiasReLU_")
                    && conv_bias(&args_of(p, i).0, false).is_some()
                {
                    by.entry(n).or_default().push(i);
                }
            }
            by
        });
        let at = p.sequences.binary_search_by_key(&e, |&(i, _)| i).ok()?;
        let list = forwards.get(&p.sequences[at].1)?;
        let upto = if before { list.partition_point(|&f| f < e) } else { list.len() };
        let f = *list[..upto].last()?;
        Some(Box::new(args_of(p, f).0))
    }

    fn modelled(&self) -> &Modelled {
        self.modelled.get_or_init(|| {
            let p = self.p;
            let small: Vec<&str> = SMALL_OPS.iter().map(|(n, _)| *n).collect();
            let families: [&[&str]; 11] = [
                &GEMM_OPS,
                &CONV_OPS,
                &SDPA_OPS,
                &UNARY_OPS,
                &BINARY_OPS,
                &NORM_OPS,
                &REDUCE_OPS,
                &RMS_OPS,
                &COLLECTIVE_OPS,
                &INFERENCE_OPS,
                &small,
            ];
            let ids: rustc_hash::FxHashSet<u32> =
                families.iter().flat_map(|f| f.iter()).filter_map(|n| p.find(n)).collect();
            let ops: Vec<usize> = match ids.is_empty() {
                true => vec![],
                false => (0..p.events.len()).filter(|&i| ids.contains(&ev(p, i).name)).collect(),
            };
            let kernels = self.subtree_gpu_events(&ops);
            Modelled { ops, kernels }
        })
    }

    /// The GPU events of each of `ops`' subtrees: of each runtime event
    /// under it, the ones that runtime event launched.
    pub(super) fn subtree_gpu_events(&self, ops: &[usize]) -> Vec<Vec<usize>> {
        let mut slot: HashMap<usize, usize> = HashMap::default();
        for (s, &e) in ops.iter().enumerate() {
            slot.insert(e, s);
        }
        let mut kernels: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
        for &(rt, g) in &self.links {
            let mut cur = Some(rt);
            while let Some(c) = cur {
                if let Some(&s) = slot.get(&c) {
                    kernels[s].push(g);
                }
                cur = self.parent[c];
            }
        }
        kernels
    }

    /// Each forward op's backward events (the reference's §2.3): the
    /// events sharing a `Sequence number` grouped; in each, the first
    /// `autograd::engine::evaluate_function:` event is the backward, and
    /// the latest-starting member on another thread (the first of equals)
    /// its forward.
    pub(super) fn backward_links(&self) -> HashMap<usize, Vec<usize>> {
        let p = self.p;
        let mut groups: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
        for &(e, n) in &p.sequences {
            groups.entry(n).or_default().push(e);
        }
        let mut out: HashMap<usize, Vec<usize>> = HashMap::default();
        for members in groups.values() {
            let is_backward =
                |m: usize| p.str(ev(p, m).name).starts_with("autograd::engine::evaluate_function:");
            let Some(&b) = members.iter().find(|&&m| is_backward(m)) else { continue };
            let thread = |m: usize| (ev(p, m).pid, ev(p, m).tid);
            let ts = |m: usize| ev(p, m).ts.map_or(f64::NEG_INFINITY, Num::f);
            let mut leaf: Option<usize> = None;
            for &m in members.iter().filter(|&&m| thread(m) != thread(b)) {
                if leaf.is_none_or(|l| ts(m) > ts(l)) {
                    leaf = Some(m);
                }
            }
            if let Some(f) = leaf {
                out.entry(f).or_default().push(b);
            }
        }
        out
    }
}

/// The sheet of `rows` (§6.4): grouped by op and parameters, summarized,
/// sorted by kernel time.
fn sheet(p: &Parsed, rows: &[Instance]) -> Table {
    // The parameter columns, by first appearance.
    let mut keys: Vec<&'static str> = Vec::new();
    for r in rows {
        for (k, _) in &r.model.params {
            if !keys.contains(k) {
                keys.push(k);
            }
        }
    }
    let value = |r: &Instance, k: &str| -> Param {
        r.model.params.iter().find(|(key, _)| *key == k).map_or(Param::Missing, |(_, v)| v.clone())
    };
    // A column of ints with a row without the key prints its ints as
    // floats (pandas' float64).
    let floaty: Vec<bool> = keys
        .iter()
        .map(|k| {
            let values: Vec<Param> = rows.iter().map(|r| value(r, k)).collect();
            values.contains(&Param::Missing)
                && values.iter().all(|v| matches!(v, Param::Int(_) | Param::Missing))
        })
        .collect();
    let mut order: Vec<Vec<usize>> = Vec::new();
    let mut keys_of: Vec<(&str, Vec<Option<String>>)> = Vec::new();
    let mut group_of: Vec<usize> = Vec::with_capacity(rows.len());
    let mut index: HashMap<(u32, Vec<Option<String>>), usize> = HashMap::default();
    for (i, r) in rows.iter().enumerate() {
        let key: Vec<Option<String>> =
            keys.iter().zip(&floaty).map(|(k, f)| param_text(&value(r, k), *f)).collect();
        let name = ev(p, r.event).name;
        let g = *index.entry((name, key.clone())).or_insert_with(|| {
            order.push(Vec::new());
            keys_of.push((p.str(name), key));
            order.len() - 1
        });
        order[g].push(i);
        group_of.push(g);
    }
    // pandas sums a group as its first value plus NumPy's pairwise sum of
    // the rest, not compensated, when the rows come grouped contiguously
    // in sorted key order (a single group, say): the reference's
    // tracelens-metrics §8.
    let rank = key_ranks(&keys_of);
    let sums = GroupSum::of(&group_of, &rank);
    let time_int = rows.iter().all(|r| r.time_int);
    // The roofline columns, where a row has one.
    let rooflines = rows.iter().any(|r| r.roofline.is_some());
    let kernel_time = |v: f64| if time_int { Cell::Int(v as i64) } else { Cell::Float(v) };
    let float = |v: Option<f64>| v.filter(|x| !x.is_nan()).map_or(Cell::Empty, Cell::Float);
    let stats = |values: Vec<f64>| sums.stats(values);
    let mut out: Vec<Ranked> = order
        .iter()
        .map(|members| {
            let group: Vec<&Instance> = members.iter().map(|&m| &rows[m]).collect();
            let first = group[0];
            let mut cells = vec![Cell::Str(p.str(ev(p, first.event).name).to_string())];
            for (k, f) in keys.iter().zip(&floaty) {
                // The group's first value (all are equal but for missing).
                let v = group.iter().find_map(|r| param_text(&value(r, k), *f));
                cells.push(v.map_or(Cell::Empty, Cell::Str));
            }
            // Per instance: GFLOPS, Data Moved (MB), FLOPS/Byte, TB/s, TFLOPS/s.
            let metrics: Vec<[f64; 5]> = group.iter().map(|r| rates(&r.model, r.time)).collect();
            let first_of = |i: usize| metrics.iter().map(|m| m[i]).find(|x| !x.is_nan());
            cells.extend([float(first_of(0)), float(first_of(1)), float(first_of(2))]);
            cells.extend(stats(metrics.iter().map(|m| m[3]).collect()));
            cells.extend(stats(metrics.iter().map(|m| m[4]).collect()));
            let text_of = |id: Option<u32>| {
                id.map_or_else(|| Cell::Str("Unknown".into()), |id| Cell::Str(p.str(id).into()))
            };
            cells.extend(first.labels.iter().map(|&l| text_of(l)));
            cells.push(Cell::Str(first.model.spec.clone()));
            if rooflines {
                let roof = group.iter().find_map(|r| r.roofline);
                cells.push(float(roof.map(|r| r.time)));
                cells.push(roof.map_or(Cell::Empty, |r| {
                    Cell::Str(if r.compute { "COMPUTE_BOUND" } else { "MEMORY_BOUND" }.into())
                }));
                cells.extend(stats(
                    group.iter().map(|r| r.roofline.map_or(f64::NAN, |r| r.pct)).collect(),
                ));
            }
            let lists: Vec<&[unique_args::Detail]> =
                group.iter().map(|r| r.details.as_slice()).collect();
            let (summary, trunc) = unique_args::kernel_details(p, &lists);
            cells.push(summary.map_or(Cell::Empty, Cell::Str));
            cells.push(trunc.map_or(Cell::Empty, Cell::Str));
            // The args as the trace holds them: lists.
            for a in 0..4 {
                let v = group.iter().find_map(|r| r.args[a]).and_then(|id| Py::parse(p.str(id)));
                cells.push(v.map_or(Cell::Empty, |v| Cell::Str(v.repr(false))));
            }
            let times: Vec<f64> = group.iter().map(|r| r.time).collect();
            let sum = if time_int { times.iter().sum::<f64>() } else { sums.sum(&times) };
            let min = times.iter().copied().fold(f64::INFINITY, f64::min);
            let max = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            cells.extend([
                Cell::Float(sum / times.len() as f64),
                Cell::Float(median(&times)),
                float(sample_std(&times)),
                kernel_time(min),
                kernel_time(max),
                kernel_time(sum),
                Cell::Int(group.len() as i64),
            ]);
            let uid = ev(p, first.event).uid;
            cells.push(Cell::Int(i64::from(uid)));
            Ranked { cells, sum, uid }
        })
        .collect();
    Ranked::sort(&mut out);
    let header = sheet_header(&keys, rooflines);
    Table { header, rows: out.into_iter().map(|o| o.cells).collect() }
}

/// A perf-model sheet's columns: the op's name, a column per parameter,
/// the rates, the roofline's (where a row has one), the kernel details, the
/// args and the kernel times.
fn sheet_header(keys: &[&str], rooflines: bool) -> Vec<String> {
    let mut header: Vec<String> = vec!["name".into()];
    header.extend(keys.iter().map(|k| format!("param: {k}")));
    for h in [
        "GFLOPS_first",
        "Data Moved (MB)_first",
        "FLOPS/Byte_first",
        "TB/s_mean",
        "TB/s_median",
        "TB/s_std",
        "TB/s_min",
        "TB/s_max",
        "TFLOPS/s_mean",
        "TFLOPS/s_median",
        "TFLOPS/s_std",
        "TFLOPS/s_min",
        "TFLOPS/s_max",
        "process_name_first",
        "process_label_first",
        "thread_name_first",
        "Compute Spec",
    ] {
        header.push(h.into());
    }
    if rooflines {
        for h in [
            "Roofline Time (µs)_first",
            "Roofline Bound_first",
            "Pct Roofline_mean",
            "Pct Roofline_median",
            "Pct Roofline_std",
            "Pct Roofline_min",
            "Pct Roofline_max",
        ] {
            header.push(h.into());
        }
    }
    for h in [
        "kernel_details__summarize_kernel_stats",
        "trunc_kernel_details",
        "Input Dims_first",
        "Input type_first",
        "Input Strides_first",
        "Concrete Inputs_first",
        "Kernel Time (µs)_mean",
        "Kernel Time (µs)_median",
        "Kernel Time (µs)_std",
        "Kernel Time (µs)_min",
        "Kernel Time (µs)_max",
        "Kernel Time (µs)_sum",
        "name_count",
        "UID_first",
    ] {
        header.push(h.into());
    }
    header
}

/// A parameter's value as its sheet column prints it: ints as floats in
/// a column pandas made float64 (`floaty`); `None` where the row has none.
fn param_text(v: &Param, floaty: bool) -> Option<String> {
    match v {
        Param::Int(i) if floaty => Some(format!("{i}.0")),
        Param::Int(i) => Some(i.to_string()),
        Param::Bool(b) => Some(if *b { "True" } else { "False" }.into()),
        Param::Text(t) | Param::Str(t) => Some(t.clone()),
        Param::Missing => None,
    }
}

/// Each group's place in the order of its keys (its op's name, then its
/// parameters' values, a missing value last), as pandas sorts the groups.
fn key_ranks(keys_of: &[(&str, Vec<Option<String>>)]) -> Vec<usize> {
    let mut by_key: Vec<usize> = (0..keys_of.len()).collect();
    by_key.sort_by(|&a, &b| {
        let (x, y) = (&keys_of[a], &keys_of[b]);
        x.0.cmp(y.0).then_with(|| {
            x.1.iter()
                .zip(&y.1)
                .map(|(u, v)| match (u, v) {
                    (Some(u), Some(v)) => u.cmp(v),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    });
    let mut rank = vec![0usize; keys_of.len()];
    for (r, &g) in by_key.iter().enumerate() {
        rank[g] = r;
    }
    rank
}

/// What a model made of one op (the reference's §7.5): its figures, an
/// error (TraceLens' other exceptions: a missing shape, an index out of
/// range), or `NotImplementedError`.
pub(super) enum Eval {
    Model(Model),
    Failed,
    NotImplemented,
}

/// The entry of `name` in TraceLens' op→model map (§7.3).
pub(super) fn modelled(
    name: &str,
) -> Option<&'static (&'static str, &'static str, Option<&'static str>)> {
    let map = &super::modelled::MODELLED;
    map.binary_search_by(|(n, _, _)| n.cmp(&name)).ok().map(|i| &map[i])
}

/// Whether `name` is a torch.compile Triton kernel's op (§7.4.16).
fn triton_name(name: &str) -> bool {
    ["triton_poi_", "triton_red_", "triton_per_"].iter().any(|p| name.starts_with(p))
}

impl Analysis<'_> {
    /// Whether the op at `e` has a perf model (§5.1): its name is in the
    /// map, or it is a Triton kernel's op whose `Concrete Inputs`, `Input
    /// Dims` and `Input type` are all there and not empty.
    pub(super) fn has_model(&self, e: usize) -> bool {
        let name = self.name(e);
        if triton_name(name) {
            let Some(s) = shape_of(self.p, e) else { return false };
            let full = |id: Option<u32>| {
                id.and_then(|id| Py::parse(self.p.str(id)))
                    .is_some_and(|v| v.seq().is_some_and(|s| !s.is_empty()))
            };
            return full(s.concrete) && full(s.dims) && full(s.types);
        }
        modelled(name).is_some()
    }

    /// The model of the op at `e` over `kernels` (its subtree's GPU
    /// events by start; GEMMs read their transposes there); `backward`:
    /// the figures of its backward pass (§6.3). Ops of the map whose model
    /// this crate does not implement (the extension models) fail, as a
    /// model that raises does.
    pub(super) fn evaluate(&self, e: usize, kernels: &[usize], backward: bool) -> Eval {
        let p = self.p;
        let name = self.name(e);
        let (mut args, _) = args_of(p, e);
        args.annotation = self.annotation_of(e);
        args.forward = self.conv_forward(e, false);
        let is = |ops: &[&str]| ops.contains(&name);
        let model = if is(&INFERENCE_OPS) {
            return match backward {
                true => Eval::NotImplemented,
                false => inference(name, &args),
            };
        } else if triton_name(name) {
            match backward {
                true => return Eval::NotImplemented,
                false => return triton(name, &args),
            }
        } else if is(&SDPA_OPS) {
            sdpa(name, &args, backward)
        } else if SMALL_OPS.iter().any(|(n, _)| *n == name) {
            match small(name, &args, backward) {
                None if backward => return Eval::NotImplemented,
                model => model,
            }
        } else if is(&CONV_OPS) {
            conv(name, &args, backward)
        } else if backward {
            // No other model here computes a backward pass.
            return Eval::NotImplemented;
        } else if is(&GEMM_OPS) {
            let transpose = kernels.iter().find_map(|&k| transpose_of(self.name(k)));
            gemm(name, &args, transpose)
        } else if is(&UNARY_OPS) {
            unary(name, &args)
        } else if is(&BINARY_OPS) {
            binary(name, &args)
        } else if is(&NORM_OPS) {
            norm(name, &args)
        } else if is(&REDUCE_OPS) {
            reduce(name, &args)
        } else if is(&RMS_OPS) {
            rms_ext(name, &args)
        } else if is(&COLLECTIVE_OPS) {
            custom_collective(name, &args)
        } else if name.contains("instance_norm_backward") {
            // `core.InstanceNormBwd` raises at construction.
            return Eval::NotImplemented;
        } else {
            None
        };
        model.map_or(Eval::Failed, Eval::Model)
    }
}

/// The Triton model of a torch.compile kernel's op (§7.4.16): the fused
/// aten ops its name lists, over `xnumel`·`rnumel` elements, and the
/// bytes of its tensors.
fn triton(name: &str, a: &Args) -> Eval {
    let sizes: Vec<i64> = a
        .concrete
        .iter()
        .flatten()
        .filter_map(Py::str)
        .filter(|t| !t.is_empty())
        .filter_map(|t| t.trim().parse().ok())
        .collect();
    let reduction = !name.starts_with("triton_poi_");
    let (xnumel, rnumel) = match sizes.as_slice() {
        [.., x, r] if reduction => (*x, *r),
        [.., x] => (*x, 1),
        [] => return Eval::NotImplemented,
    };
    let ops = fused_ops(name);
    let per_element: i64 = ops
        .iter()
        .map(|op| match *op {
            "add" | "sub" | "mul" | "div" | "relu" | "mean" | "sum" | "abs" | "neg" | "ne"
            | "eq" | "lt" | "gt" => 1,
            "pow" | "sqrt" | "rsqrt" | "var" | "reciprocal" => 2,
            "exp" | "log" | "sigmoid" | "tanh" | "silu" => 4,
            "gelu" => 8,
            _ => 0,
        })
        .sum();
    let flops = (i128::from(per_element) * i128::from(xnumel) * i128::from(rnumel)) as f64;
    // The Triton byte table: exact names, 0 for any other.
    let size = |t: &str| -> i128 {
        match t {
            "c10::BFloat16" | "c10::Half" => 2,
            "c10::Float" | "c10::Int" => 4,
            "c10::Double" | "c10::Long" => 8,
            "c10::Byte" | "c10::Char" => 1,
            _ => 0,
        }
    };
    let mut bytes: i128 = 0;
    let mut first: Option<&str> = None;
    let mut precision: Option<&str> = None;
    for (d, t) in a.dims.iter().zip(&a.types) {
        let (Some(d), Some(t)) = (d.seq(), t.str()) else { continue };
        if t == "Scalar" || d.is_empty() {
            continue;
        }
        let Some(n) = elements(d) else { return Eval::Failed };
        bytes += n * size(t);
        first.get_or_insert(t);
        if precision.is_none() && size(t) > 0 {
            precision = Some(t);
        }
    }
    if !reduction && let Some(t) = first {
        bytes += size(t) * i128::from(xnumel);
    }
    let spec = precision.map_or_else(String::new, |t| {
        format!("vector_{}", t.rsplit("::").next().unwrap_or(t).to_lowercase())
    });
    let joined: Vec<String> = ops.iter().map(|op| format!("aten.{op}")).collect();
    let params = vec![
        ("fused_ops", Param::Str(joined.join(", "))),
        ("xnumel", Param::Int(xnumel)),
        ("rnumel", Param::Int(rnumel)),
    ];
    Eval::Model(Model { params, flops, bytes: Some(bytes as f64), spec })
}

/// The aten ops of `triton_(poi|red|per)_fused_<body>_<digits>`: `<body>`'s
/// `_`-separated tokens segmented into registry names, backtracking from
/// the end through the longest name that ends at each step; none without
/// a complete segmentation.
fn fused_ops(name: &str) -> Vec<&str> {
    let Some(rest) = ["triton_poi_fused_", "triton_red_fused_", "triton_per_fused_"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
    else {
        return vec![];
    };
    let Some((body, digits)) = rest.rsplit_once('_') else { return vec![] };
    if body.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return vec![];
    }
    // Token boundaries: byte offsets where each token starts, and the end.
    let mut starts: Vec<usize> = vec![0];
    starts.extend(body.match_indices('_').map(|(i, _)| i + 1));
    let n = starts.len();
    let span = |i: usize, j: usize| -> &str {
        // Tokens i..j, joined by their underscores.
        let end = if j == n { body.len() } else { starts[j] - 1 };
        &body[starts[i]..end]
    };
    let known = |s: &str| super::modelled::TRITON_OPS.binary_search(&s).is_ok();
    // ok[j]: tokens ..j segment completely.
    let mut ok = vec![false; n + 1];
    ok[0] = true;
    for j in 1..=n {
        ok[j] = (0..j).any(|i| ok[i] && known(span(i, j)));
    }
    if !ok[n] {
        return vec![];
    }
    let mut ops = Vec::new();
    let mut j = n;
    while j > 0 {
        let i = (0..j).find(|&i| ok[i] && known(span(i, j))).expect("segmentable");
        ops.push(span(i, j));
        j = i;
    }
    ops.reverse();
    ops
}

/// The text of a parameter dict (`perf_params`): `{'M': 141, ...}`.
pub(super) fn params_dict(params: &[(&str, Param)]) -> String {
    let items: Vec<String> = params
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Param::Int(i) => i.to_string(),
                Param::Bool(b) => if *b { "True" } else { "False" }.to_string(),
                Param::Text(t) => t.clone(),
                Param::Str(t) => py(t),
                Param::Missing => "None".to_string(),
            };
            format!("{}: {v}", py(k))
        })
        .collect();
    format!("{{{}}}", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::{Py, fused_ops, transpose_of};

    /// Args of reprs as `parse` keeps them (tuples).
    fn args(dims: &str, types: &str, concrete: Option<&str>) -> super::Args {
        let seq = |t: &str| match Py::parse(t) {
            Some(Py::Seq(items)) => items,
            other => panic!("{t}: {other:?}"),
        };
        super::Args {
            dims: seq(dims),
            types: seq(types),
            strides: None,
            output_types: None,
            concrete: concrete.map(seq),
            annotation: None,
            forward: None,
        }
    }

    /// The extension GEMMs, by hand: aiter's FP8 block-scaled GEMM of a
    /// DeepSeek layer and Primus Turbo's hipBLASLt FP8 GEMM, transposed.
    #[test]
    fn extension_gemms_model_their_shapes() {
        let a = args(
            "((128, 7168), (1536, 7168), (128, 56), (12, 56), (128, 1536))",
            "('c10::Float8_e4m3fnuz', 'c10::Float8_e4m3fnuz', 'float', 'float', 'c10::BFloat16')",
            None,
        );
        let m = super::gemm("aiter::gemm_a8w8_blockscale_ck", &a, Some((Some(false), Some(true))))
            .unwrap();
        assert_eq!(m.flops, 2.0 * 128.0 * 1536.0 * 7168.0);
        assert_eq!(m.bytes, Some((128 * 7168 + 7168 * 1536 + 128 * 1536 * 2) as f64));
        assert_eq!(m.spec, "matrix_fp8");
        assert_eq!(
            super::params_dict(&m.params),
            "{'B': 1, 'M': 128, 'N': 1536, 'K': 7168, 'bias': False, 'dtype_A_B': \
             ('c10::Float8_e4m3fnuz', 'c10::Float8_e4m3fnuz', 'c10::bfloat16'), 'quant_scheme': \
             'a8w8_blockscale', 'quant_granularity': 'per_block', 'block_k': 128, 'block_n': 128, \
             'scale_dtype': 'float', 'output_shape': (128, 1536), 'output_dtype': 'c10::bfloat16', \
             'transpose': (False, True)}"
        );
        // A (K, M) and B (N, K), transposed both: M 256, K 512, N 1024.
        let a = args(
            "((512, 256), (), (1024, 512), ())",
            "('c10::Float8_e4m3fnuz', 'float', 'c10::Float8_e4m3fnuz', 'float')",
            Some("('', '', '', '', '', 'True', 'true', 'False')"),
        );
        let m = super::gemm("primus_turbo::hipblaslt_gemm_fp8", &a, None).unwrap();
        let (mm, n, k) = (256.0, 1024.0, 512.0);
        assert_eq!(m.flops, 2.0 * mm * n * k);
        assert_eq!(m.bytes, Some(mm * k + k * n + mm * n * 2.0));
        assert_eq!(
            super::params_dict(&m.params),
            "{'M': 256, 'N': 1024, 'K': 512, 'bias': False, 'stride_A': None, 'stride_B': None, \
             'dtype_A_B': ('c10::Float8_e4m3fnuz', 'c10::Float8_e4m3fnuz'), 'dtype_scaleA': \
             'float', 'dtype_scaleB': 'float', 'B': 1}"
        );
        // Its FP4 sibling needs both element sizes: an unknown one raises.
        let a =
            args("((256, 512), (), (512, 1024), ())", "('fp4', 'float', 'mxfp4', 'float')", None);
        assert!(super::gemm("primus_turbo::hipblaslt_gemm_fp4", &a, None).is_none());
    }

    /// aiter's RMSNorm of 4 tokens of 4096 channels, alone and with a
    /// residual add, by hand.
    #[test]
    fn rmsnorm_extensions_model_their_shapes() {
        let a =
            args("((4, 4096), (4096,), ())", "('c10::BFloat16', 'c10::BFloat16', 'Scalar')", None);
        let m = super::rms_ext("aiter::rms_norm", &a).unwrap();
        assert_eq!(m.flops, 4.0 * (2.0 * 4096.0 + 2.0) + 2.0 * 16384.0);
        assert_eq!(m.bytes, Some(2.0 * 16384.0 * 2.0 + 4096.0 * 2.0));
        assert_eq!(m.spec, "vector_bf16");
        assert_eq!(
            super::params_dict(&m.params),
            "{'op_shape': (4, 4096), 'dtype_in_out': ('c10::BFloat16', None), 'stride_input': \
             None, 'stride_output': None, 'num_channels': 4096, 'has_bias': False, 'is_affine': \
             True, 'is_training': False}"
        );
        let a = args(
            "((4, 4096), (4, 4096), (4, 4096), (4, 4096), (4096,), ())",
            "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar')",
            None,
        );
        let m = super::rms_ext("aiter::rmsnorm2d_fwd_with_add_ck", &a).unwrap();
        assert_eq!(m.flops, 16384.0 + 4.0 * (2.0 * 4096.0 + 2.0) + 2.0 * 16384.0);
        assert_eq!(m.bytes, Some(4.0 * 16384.0 * 2.0 + 4096.0 * 2.0));
    }

    /// A custom all-reduce and a fused all-reduce + RMSNorm, by hand.
    #[test]
    fn custom_collectives_model_the_bytes_they_move() {
        let a = args("((), (8, 4096), ())", "('', 'c10::BFloat16', '')", None);
        let m = super::custom_collective("_C_custom_ar::all_reduce", &a).unwrap();
        assert_eq!((m.flops, m.bytes, m.spec.as_str()), (0.0, Some(2.0 * 32768.0 * 2.0), ""));
        assert_eq!(
            super::params_dict(&m.params),
            "{'op_shape': (8, 4096), 'dtype_in': 'c10::BFloat16', 'stride_input': None}"
        );
        let a = args("((8, 4096), (8, 4096), (4096,))", "('c10::BFloat16', '', '')", None);
        let m = super::custom_collective("aiter::fused_allreduce_rmsnorm_", &a).unwrap();
        let (e, c) = (32768.0, 4096.0);
        assert_eq!(m.flops, e + 8.0 * (2.0 * c + 2.0) + 2.0 * e);
        assert_eq!(m.bytes, Some(2.0 * e * 2.0 + c * 2.0 + 2.0 * e * 2.0));
    }

    /// vLLM's SiLU-and-multiply and aiter's per-token FP8 quantization of
    /// 8 tokens of 4096, by hand.
    #[test]
    fn fused_activations_and_quantizations_model_their_shapes() {
        let mut a = args("((8, 4096), (8, 8192))", "('c10::BFloat16', 'c10::BFloat16')", None);
        a.strides = Some(vec![Py::parse("(4096, 1)").unwrap(), Py::parse("(8192, 1)").unwrap()]);
        let m = super::unary("_C::silu_and_mul", &a).unwrap();
        let n = 8.0 * 4096.0;
        assert_eq!((m.flops, m.bytes), (5.0 * n, Some(2.0 * n * 2.0 + n * 2.0)));
        assert_eq!(
            super::params_dict(&m.params),
            "{'op_shape': (8, 4096), 'dtype_in_out': ('c10::BFloat16', 'c10::BFloat16'), \
             'stride_input': (8192, 1), 'stride_output': (4096, 1)}"
        );
        let mut a = args(
            "((8, 4096), (8, 4096), (8, 1))",
            "('c10::Float8_e4m3fnuz', 'c10::BFloat16', 'float')",
            None,
        );
        let strides = ["(4096, 1)", "(4096, 1)", "(1, 1)"];
        a.strides = Some(strides.iter().map(|s| Py::parse(s).unwrap()).collect());
        let m = super::binary("aiter::dynamic_per_token_scaled_quant", &a).unwrap();
        assert_eq!(m.flops, n * 2.59375);
        assert_eq!(m.bytes, Some(n * 1.0 + n * 2.0 + 8.0 * 4.0));
        assert_eq!(m.spec, "vector_bf16");
    }

    /// flash-attn's forward of (B, N, H, d) = (2, 1024, 16, 128), causal,
    /// by hand: two matmuls halved, q, k, v and the output at 2 bytes.
    #[test]
    fn flash_attn_reads_its_layout() {
        let mut a = args(
            "((2, 1024, 16, 128), (2, 1024, 16, 128), (2, 1024, 16, 128), (), (), ())",
            "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar')",
            Some("('', '', '', '0.0', '0.08838834764831845', 'True')"),
        );
        let s = Py::parse("(2097152, 2048, 128, 1)").unwrap();
        a.strides = Some(vec![s.clone(), s.clone(), s, Py::parse("()").unwrap()]);
        let m = super::sdpa("flash_attn::_flash_attn_forward", &a, false).unwrap();
        let (b, h, n, d) = (2.0, 16.0, 1024.0, 128.0);
        assert_eq!(m.flops, (b * h * 2.0 * n * n * d * 2.0) / 2.0);
        assert_eq!(m.bytes, Some(4.0 * b * n * h * d * 2.0));
        assert_eq!(
            super::params_dict(&m.params),
            "{'B': 2, 'N_Q': 1024, 'H_Q': 16, 'N_KV': 1024, 'H_KV': 16, 'd_h_qk': 128, 'd_h_v': \
             128, 'q_stride': (2097152, 2048, 128, 1), 'k_stride': (2097152, 2048, 128, 1), \
             'v_stride': (2097152, 2048, 128, 1), 'dropout': 0.0, 'causal': True, 'flash_impl': \
             True, 'dtype_A_B': ('c10::BFloat16', 'c10::BFloat16')}"
        );
    }

    /// The other attention ops' layouts and argument positions, by hand:
    /// flash-attn's own backward (dout first, causal by default, bytes at
    /// dout's element size), its varlen forward (three packed sequences),
    /// aiter's backward (the backward formulas, no dtype so no spec), and
    /// Evoformer's folded batch.
    #[test]
    fn attention_variants_read_their_arguments() {
        let bnhd = "(2, 512, 8, 64)";
        let mut a = args(
            &format!("({bnhd}, {bnhd}, {bnhd}, {bnhd}, {bnhd}, (2, 8, 512))"),
            "('c10::Half', 'c10::Half', 'c10::Half', 'c10::Half', 'c10::Half', 'float')",
            Some("('', '', '', '', '', '', '', '', '0.0', '0.125')"),
        );
        let s = Py::parse("(262144, 512, 64, 1)").unwrap();
        a.strides = Some(vec![s.clone(); 6]);
        let m = super::sdpa("flash_attn::_flash_attn_backward", &a, false).unwrap();
        let (b, h, n, d) = (2.0, 8.0, 512.0, 64.0);
        let bwd = b * h * 2.0 * n * n * d * 5.0; // 5 matmuls, H_Q = H_KV
        assert_eq!(m.flops, bwd / 2.0, "causal when C10 is absent");
        assert_eq!(m.bytes, Some((2.0 * 3.0 + 1.0) * b * n * h * d * 2.0));
        assert_eq!(m.spec, "matrix_fp16");
        let dict = super::params_dict(&m.params);
        assert!(dict.contains("'dropout': 0.0, 'causal': True, 'flash_impl': True"), "{dict}");
        // The same op recorded without strides has no model.
        a.strides = None;
        assert!(super::sdpa("flash_attn::_flash_attn_backward", &a, false).is_none());

        // Varlen: 3 sequences packed in 1000 tokens, the longest 600 (so
        // the other two at ⌊400 / 2⌋ = 200), 16 heads of 128.
        let t = "(1000, 16, 128)";
        let mut a = args(
            &format!("({t}, {t}, {t}, (4,), (4,), (), (), (), (), ())"),
            "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'int', 'int')",
            Some("('', '', '', '', '', '600', '600', '0.0', '0.08', 'False')"),
        );
        let s = Py::parse("(2048, 128, 1)").unwrap();
        a.strides = Some(vec![s.clone(), s.clone(), s]);
        let m = super::sdpa("flash_attn::_flash_attn_varlen_forward", &a, false).unwrap();
        let fwd = |n: f64| 16.0 * 2.0 * n * n * 128.0 * 2.0;
        assert_eq!(m.flops, fwd(600.0) + 2.0 * fwd(200.0));
        assert_eq!(m.bytes, Some(4.0 * 1000.0 * 16.0 * 128.0 * 2.0));
        let dict = super::params_dict(&m.params);
        assert!(
            dict.ends_with(
                "'num_seqs_q': 3, 'num_seqs_kv': 3, 'max_seqlen_q': 600.0, 'max_seqlen_kv': 600.0}"
            ),
            "{dict}"
        );

        // aiter::mha_bwd(dout, q, k, v, out, lse, dropout_p, scale, causal).
        let a = args(
            &format!("({bnhd}, {bnhd}, {bnhd}, {bnhd}, {bnhd}, (2, 8, 512))"),
            "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16')",
            Some("('', '', '', '', '', '', '', '0.125', 'false')"),
        );
        let m = super::sdpa("aiter::mha_bwd", &a, false).unwrap();
        assert_eq!(m.flops, bwd);
        assert_eq!(m.spec, "");
        assert!(!super::params_dict(&m.params).contains("dtype_A_B"));
        // Its concrete inputs cut short: TraceLens' index error, no row.
        let short = args(&format!("({bnhd}, {bnhd}, {bnhd}, {bnhd})"), "()", Some("('', '')"));
        assert!(super::sdpa("aiter::mha_bwd", &short, false).is_none());

        // Evoformer: (Batch, N_seq, N_res, Head, Dim) = (1, 4, 256, 8, 32).
        let q = "(1, 4, 256, 8, 32)";
        let a = args(&format!("({q}, {q}, {q})"), "('c10::BFloat16',)", None);
        let m = super::sdpa("EvoformerAttention", &a, false).unwrap();
        assert_eq!(m.flops, 4.0 * 8.0 * 2.0 * 256.0 * 256.0 * 32.0 * 2.0);
        assert_eq!(
            super::params_dict(&m.params),
            "{'B': 4, 'N_Q': 256, 'H_Q': 8, 'N_KV': 256, 'H_KV': 8, 'd_h_qk': 32, 'd_h_v': 32, \
             'causal': False, 'flash_impl': False, 'dtype_A_B': ['c10::BFloat16']}"
        );
        assert_eq!(m.spec, "matrix_bf16");
    }

    /// The MoE GEMMs by hand: a DeepSeek-like fused MoE (256 experts,
    /// top-8, gated, FP8 weights) and its two unfused stages.
    #[test]
    fn moe_gemms_model_their_shapes() {
        let (m, k, n, e, topk): (f64, f64, f64, f64, f64) = (64.0, 7168.0, 256.0, 256.0, 8.0);
        let act = e * (1.0 - ((e - topk) / e).powf(m));
        // fused_1stage(input, w1 (E, 2N, K), w2 (E, K, N), topk_weights).
        let a = args(
            "((64, 7168), (256, 512, 7168), (256, 7168, 256), (64, 8))",
            "('c10::BFloat16', 'c10::Float8_e4m3fnuz', 'c10::Float8_e4m3fnuz', 'float')",
            None,
        );
        let f = super::small("pseudo_op::moe_aiter_fused_1stage", &a, false).unwrap();
        let flops =
            2.0 * m * k * n * topk * 2.0 + 2.0 * m * k * n * topk + m * k * (2.0 * topk - 1.0);
        assert_eq!(f.flops, flops);
        let bytes = m * k * 2.0 + act * n * k * 1.0 * 2.0 + act * n * k * 1.0 + m * k * 2.0;
        assert_eq!(f.bytes, Some(bytes));
        assert_eq!(f.spec, "matrix_bf16");
        assert_eq!(
            super::params_dict(&f.params),
            "{'num_tokens': 64, 'hidden_dim': 7168, 'inter_dim': 256, 'num_experts': 256, \
             'topk': 8, 'gated': True, 'input_dtype': 'c10::BFloat16', 'weight_dtype': \
             'c10::Float8_e4m3fnuz'}"
        );
        assert!(super::small("pseudo_op::moe_aiter_fused_1stage", &a, true).is_none());

        // Stage 1: (tokens, hidden), w1 (E, 2N, K), out (tokens, topk, N).
        let a = args(
            "((64, 7168), (256, 512, 7168), (64, 8, 256))",
            "('c10::BFloat16', 'c10::Float8_e4m3fnuz', 'c10::BFloat16')",
            None,
        );
        let up = super::small("aiter::moe_cktile2stages_gemm1_ck", &a, false).unwrap();
        assert_eq!(up.flops, 2.0 * m * k * n * topk * 2.0);
        assert_eq!(up.bytes, Some(m * k * 2.0 + act * 2.0 * k * n * 1.0 + m * n * topk * 2.0));
        // Stage 2: (tokens, topk, N), w2 (E, K, N), out (tokens, hidden).
        let a = args(
            "((64, 8, 256), (256, 7168, 256), (64, 7168))",
            "('c10::BFloat16', 'c10::Float8_e4m3fnuz', 'c10::BFloat16')",
            None,
        );
        let down = super::small("aiter::moe_cktile2stages_gemm2_ck", &a, false).unwrap();
        assert_eq!(down.flops, 2.0 * m * n * k * topk);
        assert_eq!(down.bytes, Some(m * n * topk * 2.0 + act * n * k * 1.0 + m * k * 2.0));
        assert!(!super::params_dict(&down.params).contains("gated"));
        // No experts: TraceLens divides by zero, so no row.
        let a = args("((64, 8, 256), (0, 7168, 256), (64, 7168))", "('a', 'b', 'c')", None);
        assert!(super::small("aiter::moe_cktile2stages_gemm2_ck", &a, false).is_none());
    }

    /// mHC's fused post + pre projection and aiter's softplus router, by
    /// hand (M = 4 tokens, n = 4 streams of C = 64, hc3 = n² + 2n = 24).
    #[test]
    fn mhc_and_router_ops_model_their_shapes() {
        let a = args(
            "((2, 4, 24), (2, 4), (4, 4, 64), (4, 64), (4, 4, 64), (4, 4, 1), (4, 4, 4), (24, 256))",
            "('float', 'float', 'c10::BFloat16', 'c10::BFloat16')",
            None,
        );
        let m = super::small("aiter::mhc_fused_post_pre_gemm_sqrsum", &a, false).unwrap();
        let (mm, n, c, hc3, k, split) = (4.0, 4.0, 64.0, 24.0, 256.0, 2.0);
        assert_eq!(m.flops, 2.0 * mm * n * c * (n + 1.0) + 2.0 * mm * hc3 * k);
        let bytes = mm * c * 2.0
            + 3.0 * mm * n * c * 2.0
            + 4.0 * mm * n
            + 4.0 * mm * n * n
            + 4.0 * hc3 * k
            + 4.0 * split * mm * hc3
            + 4.0 * split * mm;
        assert_eq!(m.bytes, Some(bytes));
        assert_eq!(m.spec, "matrix_bf16");
        assert_eq!(
            super::params_dict(&m.params),
            "{'M': 4, 'n': 4, 'C': 64, 'hc3': 24, 'K': 256, 'split_k': 2, 'dtype_in': \
             'c10::BFloat16'}"
        );
        // topk_softplus(weights (M, topk), ids (M, topk), gating (M, E)).
        let a = args("((16, 8), (16, 8), (16, 128))", "('float', 'int', 'c10::BFloat16')", None);
        let m = super::small("aiter::topk_softplus", &a, false).unwrap();
        assert_eq!(m.flops, 6.0 * 16.0 * 128.0);
        assert_eq!(m.bytes, Some(16.0 * 128.0 * 2.0 + 128.0 * 4.0 + 2.0 * 16.0 * 8.0 * 4.0));
        assert_eq!(m.spec, "vector_bf16");
        // SGLang's shared-expert append: ids and weights read and written.
        let a = args("((16, 9), (16, 9))", "('int', 'float')", None);
        let name = "sglang_profiler::fused_moe_triton_kernels_fused_append_shared_experts";
        let m = super::small(name, &a, false).unwrap();
        assert_eq!(m.flops, 144.0);
        assert_eq!(m.bytes, Some(2.0 * (144.0 * 4.0 + 144.0 * 4.0)));
        assert_eq!(m.spec, "vector_fp32");
    }

    /// The detailed iteration annotations of vLLM, SGLang and ATOM give
    /// their sums; the native forms (no sq·sk sums) and other text none.
    #[test]
    fn iteration_annotations_give_their_sums() {
        use super::iteration_stats as stats;
        assert_eq!(
            stats(
                "execute_64_context_0(sq0sk0sqsq0sqsk0)_generation_64(sq64sk131072sqsq64sqsk131072)"
            ),
            Some([0, 0, 0, 0, 64, 131072, 64, 131072])
        );
        assert_eq!(
            stats(
                "step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]"
            ),
            Some([5, 8, 25, 40, 1, 12, 1, 12])
        );
        assert_eq!(
            stats("step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]"),
            Some([0, 0, 0, 0, 128, 131072, 256, 262144])
        );
        assert_eq!(
            stats(
                "prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=108745533 sqsk=108745533 sk=14721]"
            ),
            Some([14721, 14721, 108745533, 108745533, 0, 0, 0, 0])
        );
        assert_eq!(
            stats("decode[bs=117/128 tok=384 p=2 d=126 sqsq=132612 sqsk=1114112 sk=258048 tbo=1]"),
            Some([0, 0, 0, 0, 384, 258048, 132612, 1114112])
        );
        // aiter's sparse prefill needs none: 96 + 32 KV slots for 64
        // queries of 16 heads of 512.
        let a = args(
            "((64, 16, 512), (), (96,), (), (), (32,))",
            "('c10::BFloat16', 'c10::BFloat16')",
            None,
        );
        let super::Eval::Model(m) = super::inference("aiter::pa_sparse_prefill_opus_fwd", &a)
        else {
            panic!("no model")
        };
        assert_eq!(m.flops, 128.0 * 16.0 * 2.0 * 1024.0);
        assert_eq!(m.bytes, Some(2.0 * 64.0 * 16.0 * 512.0 * 2.0 + 128.0 * 512.0 * 2.0));
        assert!(matches!(
            super::inference("vllm::gdn_attention_core", &a),
            super::Eval::NotImplemented
        ));
        for native in [
            "execute_context_2(14721)_generation_0(0)",
            "step[EXTEND bs=2 toks=14721]",
            "step[EXTENDED sqsq=1]",
            "prefill[bs=2 tok=14721 ctx=[7803, 6918]]",
            "decode[bs=32 tok=128 sqsq=512 sk=65536]",
            "NA",
            "ProfilerStep#3",
        ] {
            assert_eq!(stats(native), None, "{native}");
        }
    }

    /// Group norm's backward (channels per group, a float), instance norm
    /// and Primus' fused LayerNorm + modulate, by hand.
    #[test]
    fn the_other_normalizations_model_their_shapes() {
        let x = "(8, 32, 16, 16)";
        let mut a = args(
            &format!("({x}, {x}, (8, 4), (8, 4), (32,), (32,), (), (), (), ())"),
            "('c10::BFloat16', 'c10::BFloat16', 'float', 'float', 'c10::BFloat16', 'c10::BFloat16')",
            Some("('', '', '', '', '', '8', '32', '256', '4', '[True, True, True]')"),
        );
        let s = Py::parse("(8192, 256, 16, 1)").unwrap();
        a.strides = Some(vec![s.clone(), s]);
        let m = super::norm("aten::native_group_norm_backward", &a).unwrap();
        let e = 65536.0;
        assert_eq!(m.flops, 8.0 * (4.0 * (e / 8.0) + 5.0 * (e / 8.0)));
        assert_eq!(
            m.bytes,
            Some(e * 2.0 + e * 2.0 * 2.0 + 8.0 * 2.0 + 8.0 * 2.0 + 8.0 * 2.0 * 2.0)
        );
        let dict = super::params_dict(&m.params);
        assert!(dict.contains("'num_channels': 8.0,"), "{dict}");

        let x = "(4, 16, 32, 32)";
        let mut a = args(
            &format!("({x}, (16,), (16,), (16,), (16,), (), (), (), ())"),
            "('c10::BFloat16', 'c10::BFloat16')",
            Some("('', '', '', '', '', 'True', '0.1', '1e-05', 'True')"),
        );
        a.strides = Some(vec![Py::parse("(16384, 1024, 32, 1)").unwrap()]);
        let m = super::norm("aten::instance_norm", &a).unwrap();
        assert_eq!(m.flops, 3.0 * 16.0 + 3.0 * e + 3.0 * 16.0 + 2.0 * e);
        assert_eq!(m.bytes, Some(e * 2.0 * 2.0 + 6.0 * 16.0 * 2.0));

        let a = args("((128, 4, 1024), (4, 1024), (4, 1024))", "('c10::BFloat16',)", None);
        let m = super::norm("primus::fused_ln_modulate", &a).unwrap();
        let n = 128.0 * 4.0 * 1024.0;
        assert_eq!(m.flops, 12.0 * n);
        assert_eq!(
            m.bytes,
            Some(2.0 * n * 2.0 + 2.0 * 4.0 * 1024.0 * 2.0 + 2.0 * 128.0 * 4.0 * 4.0)
        );
        assert_eq!(m.spec, "vector_bf16");
    }

    /// Two sheets concatenated as pandas does: the second's new column is
    /// missing in the first's rows, and its integers print as floats there
    /// once the column holds a missing cell.
    #[test]
    fn concatenated_sheets_widen_their_integers() {
        use crate::compute::{Cell, Table};
        let t = |header: &[&str], rows: Vec<Vec<Cell>>| Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        };
        let s = |v: &str| Cell::Str(v.into());
        let a = t(&["name", "param: B", "n"], vec![vec![s("x"), s("2"), Cell::Int(1)]]);
        let b = t(
            &["name", "param: B", "param: num_seqs_q", "n"],
            vec![vec![s("y"), s("1"), s("3"), Cell::Int(4)]],
        );
        let c = super::concat(Some(a), Some(b)).unwrap();
        assert_eq!(c.header, ["name", "param: B", "n", "param: num_seqs_q"]);
        assert_eq!(c.rows[0], [s("x"), s("2"), Cell::Int(1), Cell::Empty]);
        assert_eq!(c.rows[1], [s("y"), s("1"), Cell::Int(4), s("3.0")]);
    }

    /// Cross-entropy over a 4 × 32000 vocabulary, a fused RoPE and a MoE
    /// dispatch, by hand.
    #[test]
    fn the_smaller_families_model_their_shapes() {
        let a = args("((4, 32000), (4,))", "('c10::BFloat16', 'long int')", None);
        let m = super::small("CrossEntropyFunction", &a, false).unwrap();
        assert_eq!(m.flops, 5.0 * 4.0 * 32000.0);
        assert_eq!(m.bytes, Some(4.0 * 32000.0 * 2.0 + 4.0 * 8.0 + 4.0 * 4.0));
        assert_eq!(
            super::params_dict(&m.params),
            "{'batch': 4, 'vocab_size': 32000, 'logits_shape': (4, 32000)}"
        );
        let a = args("((128, 2, 16, 64), (128, 1, 1, 64))", "('float', 'float')", None);
        let m = super::small("FusedRoPEFunc", &a, false).unwrap();
        let n = 128.0 * 2.0 * 16.0 * 64.0;
        assert_eq!(
            (m.flops, m.bytes, m.spec.as_str()),
            (3.0 * n, Some(2.0 * n * 4.0), "vector_fp32")
        );
        let a = args("((512, 7168),)", "('c10::BFloat16',)", None);
        let m = super::small("MoEDispatch", &a, true).unwrap();
        assert_eq!((m.flops, m.bytes), (0.0, Some(512.0 * 7168.0 * 2.0)));
        assert!(super::small("CrossEntropyFunction", &a, true).is_none(), "no backward");
        // A rotary embedding whose query has no shape: no model, no panic.
        let a = args(
            "((), (), (4, 512))",
            "('', 'c10::BFloat16', 'c10::BFloat16')",
            Some("('', '', '', '64')"),
        );
        assert!(super::small("sgl_kernel::rotary_embedding", &a, false).is_none());
        // aiter's MoE sorting: its operands, the largest's elements as FLOPs.
        let a =
            args("((512, 8), (512, 8), (), (4096,))", "('int', 'float', 'Scalar', 'int')", None);
        let m = super::small("aiter::moe_sorting_fwd", &a, false).unwrap();
        assert_eq!((m.flops, m.bytes), (4096.0, Some((512 * 8 * 4 * 2 + 4096 * 4) as f64)));
        assert_eq!(
            super::params_dict(&m.params),
            "{'operands': [((512, 8), 'int'), ((512, 8), 'float'), ((4096,), 'int')]}"
        );
    }

    /// Primus Turbo's grouped GEMM of 8 experts, compact, and its
    /// variable-K form zipped, by hand.
    #[test]
    fn grouped_gemms_read_both_forms() {
        let a = args(
            "((4096, 2048), (8, 2048, 1408), (8,))",
            "('c10::BFloat16', 'c10::BFloat16', 'long int')",
            None,
        );
        let m = super::small("primus_turbo::grouped_gemm", &a, false).unwrap();
        assert_eq!(m.flops, 2.0 * 4096.0 * 2048.0 * 1408.0);
        let bytes = (4096 * 2048 + 8 * 2048 * 1408) * 2 + 4096 * 1408 * 2;
        assert_eq!((m.bytes, m.spec.as_str()), (Some(bytes as f64), "matrix_bf16"));
        assert_eq!(
            super::params_dict(&m.params),
            "{'M': 4096, 'K': 2048, 'N': 1408, 'G': 8, 'bpe_in': 2, 'bpe_out': 2}"
        );
        let a = args(
            "(((64, 128), (32, 128)), ((128, 256), (128, 256)))",
            "('c10::BFloat16', 'c10::BFloat16')",
            None,
        );
        let m = super::small("primus_turbo::grouped_gemm_variable_k", &a, false).unwrap();
        assert_eq!(m.flops, (2 * 64 * 128 * 256 + 2 * 32 * 128 * 256) as f64);
        assert_eq!(
            super::params_dict(&m.params),
            "{'M': 96, 'K': 128, 'N': 256, 'G': 2, 'bpe_in': 2, 'bpe_out': 2, 'group_pairs': \
             [((64, 128), (128, 256)), ((32, 128), (128, 256))]}"
        );
        assert!(super::small("primus_turbo::grouped_gemm", &a, true).is_none(), "no backward");
    }

    #[test]
    fn triton_names_split_into_the_longest_registry_ops() {
        assert_eq!(fused_ops("triton_poi_fused__unsafe_view_add_3"), ["_unsafe_view", "add"]);
        assert_eq!(
            fused_ops("triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1"),
            ["_unsafe_view", "add", "mean", "mul", "pow", "rsqrt"]
        );
        assert_eq!(
            fused_ops("triton_poi_fused_add_bitwise_and_bitwise_not_ge_0"),
            ["add", "bitwise_and", "bitwise_not", "ge"]
        );
        // No complete segmentation, no number, another kind: none.
        assert!(fused_ops("triton_poi_fused_add_notanop_0").is_empty());
        assert!(fused_ops("triton_poi_fused_add").is_empty());
        assert!(fused_ops("triton_tem_fused_mm_0").is_empty());
    }

    #[test]
    fn reprs_read_back_and_print_as_lists() {
        let text = "((512,), (141, 512), (), None, 'c10::BFloat16', {'a': [1]}, 'it''s')";
        assert_eq!(Py::parse(text), None, "not a repr");
        let text = "((512,), (141, 512), (), None, 'c10::BFloat16', {'a': [1, (2)]}, \"it's\")";
        let v = Py::parse(text).unwrap();
        assert_eq!(v.repr(true), text);
        assert_eq!(
            v.repr(false),
            "[[512], [141, 512], [], None, 'c10::BFloat16', {'a': [1, (2)]}, \"it's\"]"
        );
        assert_eq!(Py::parse("('a\\\\b\\n',)").unwrap().repr(false), "['a\\\\b\\n']");
    }

    #[test]
    fn transpose_flags_from_kernel_names() {
        let rocm = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128";
        assert_eq!(transpose_of(rocm), Some((Some(true), Some(false))));
        assert_eq!(transpose_of("Cijk_Axyz_Bxyz_S"), Some((None, None)));
        assert_eq!(
            transpose_of("nvjet_tst_64x8_64x16_4x1_v_bz_TN"),
            Some((Some(true), Some(false)))
        );
        assert_eq!(transpose_of("void cutlass::Kernel<gemm>"), None);
    }
}
