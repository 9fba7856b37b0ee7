//! `cargo xtask fixtures`: write the synthetic fixtures, deterministically.
//!
//! Every file under `fixtures/synthetic/` is produced here from constants, so
//! the tree is the same on every machine; `--check` regenerates it in memory
//! and fails when the committed files differ.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use flate2::{Compression, GzBuilder};

pub(crate) struct Fixture {
    pub(crate) path: &'static str,
    pub(crate) bytes: Vec<u8>,
    pub(crate) how: &'static str,
}

/// A small Kineto trace laid out like the Kineto writer's (one event per
/// line); with `gpu`, a GEMM kernel launched from `aten::mm` (with its
/// `ac2g` flow) and an RCCL all-reduce kernel under `c10d::allreduce_`.
fn kineto(name_extra: &str, dist: Option<(u32, u32)>, dist_at_end: bool, gpu: bool) -> String {
    let dist = dist.map(|(rank, world)| {
        format!(
            "\"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {world}, \"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": {world}, \"ranks\": [{}]}}], \"nccl_version\": \"2.21.5\"}}",
            (0..world).map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
        )
    });
    let mut s = String::from(
        "\n{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": 0, \"name\": \"AMD Instinct MI300X\", \"totalGlobalMem\": 205822885888,\n      \"computeMajor\": 9, \"computeMinor\": 4,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, \"warpSize\": 64,\n      \"sharedMemPerBlock\": 65536, \"numSms\": 304\n    }\n  ],\n",
    );
    if let (Some(d), false) = (&dist, dist_at_end) {
        s.push_str(&format!("  {d},\n"));
    }
    s.push_str("  \"record_shapes\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1759300000000000000,\n  \"traceEvents\": [\n");
    let mut events = vec![
        format!("  {{\n    \"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"train.py(12): step{name_extra}\", \"pid\": 4242, \"tid\": 4242,\n    \"ts\": 100.000, \"dur\": 90.000,\n    \"args\": {{\n      \"Python id\": 1, \"Python parent id\": 0\n    }}\n  }}"),
        "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 4242, \"tid\": 4242,\n    \"ts\": 110.000, \"dur\": 20.000,\n    \"args\": {\n      \"External id\": 7,\"Ev Idx\": 0, \"Input Dims\": [[64, 64], [64, 64]]\n    }\n  }".into(),
    ];
    if gpu {
        events.push("  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipLaunchKernel\", \"pid\": 4242, \"tid\": 4242,\n    \"ts\": 115.000, \"dur\": 5.000,\n    \"args\": {\n      \"External id\": 7, \"cid\": 1, \"correlation\": 11\n    }\n  }".into());
        events.push("  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"Cijk_Alik_Bljk_HHS_BH_MT64x64x32\", \"pid\": 2, \"tid\": 1,\n    \"ts\": 121.000, \"dur\": 8.500,\n    \"args\": {\n      \"External id\": 7, \"device\": 2, \"stream\": 1, \"correlation\": 11, \"kind\": \"Dispatch Kernel\", \"grid\": [256, 1, 1], \"block\": [256, 1, 1]\n    }\n  }".into());
        events.push("  {\n    \"ph\": \"s\", \"id\": 11, \"pid\": 4242, \"tid\": 4242, \"ts\": 115.000,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }".into());
        events.push("  {\n    \"ph\": \"f\", \"id\": 11, \"pid\": 2, \"tid\": 1, \"ts\": 121.000,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }".into());
        events.push("  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::allreduce_\", \"pid\": 4242, \"tid\": 4242,\n    \"ts\": 140.000, \"dur\": 10.000,\n    \"args\": {\n      \"External id\": 9,\"Ev Idx\": 1\n    }\n  }".into());
        events.push("  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": 2, \"tid\": 2,\n    \"ts\": 150.000, \"dur\": 20.000,\n    \"args\": {\n      \"External id\": 9, \"device\": 2, \"stream\": 2, \"correlation\": 12, \"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 1048576, \"Out msg nelems\": 1048576, \"Group size\": 2, \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process Group Ranks\": \"[0, 1]\"\n    }\n  }".into());
    }
    events.push("  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": 200.000\n  }".into());
    s.push_str(&events.join(",\n"));
    s.push_str("\n  ]");
    if let (Some(d), true) = (&dist, dist_at_end) {
        s.push_str(&format!(",\n  {d}"));
    }
    s.push_str(",\n  \"traceName\": \"/tmp/madengine_kineto/trace.json\"\n}\n");
    s
}

fn rocprofv3(kname: &[u8]) -> Vec<u8> {
    let mut s = br#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":9999,"init_time":1000,"fini_time":9000,"command":["python3","train.py"]},"strings":{"buffer_records":[{"kind":"HIP_RUNTIME_API","operations":["hipModuleGetFunction","hipLaunchKernel"]}]},"kernel_symbols":[{"kernel_id":0,"kernel_name":""},{"kernel_id":1,"kernel_name":"Cijk_Alik_Bljk_HHS_BH_MT64x64x32.kd"}],"buffer_records":{"hip_api":[{"size":56,"kind":0,"operation":0,"thread_id":9999,"correlation_id":{"internal":1,"external":0},"start_timestamp":1100,"end_timestamp":1200,"args":{"hfunc":"0x7f00","hmod":"0x7f10","kname":""#.to_vec();
    s.extend_from_slice(kname);
    s.extend_from_slice(br#""}}],"kernel_dispatch":[{"size":96,"kind":11,"operation":2,"thread_id":9999,"correlation_id":{"internal":2,"external":0},"start_timestamp":1300,"end_timestamp":1800,"dispatch_info":{"agent_id":{"handle":2},"queue_id":{"handle":1},"kernel_id":1,"dispatch_id":1,"workgroup_size":{"x":256,"y":1,"z":1},"grid_size":{"x":65536,"y":1,"z":1}}}],"memory_copy":[]}}]}"#);
    s.push(b'\n');
    s
}

/// The tables and views of a rocpd database (rocprofv3's SQLite output),
/// cut down to what madengine reads: the views keep the column names of
/// rocprofiler-sdk's published `kernels` and `memory_copies` views (`name`,
/// `start`, `end`, `agent_type_index`, `kernel_id`, `grid_x`, ...), which is
/// what is read; the tables under them are simpler than rocprofv3's own,
/// whose layout changes between schema versions (the real views join
/// tracks, events and timestamps tables).
///
/// As rocprofv3 writes them, each table is named with its run's UUID
/// (`rocpd_info_process_0198c0de_...`, the suffix tests use to change
/// rows), under a view of the plain name, which the data views and the
/// readers use.
pub(crate) const ROCPD_SCHEMA: &str = r#"
PRAGMA page_size = 1024;
CREATE TABLE rocpd_metadata_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (id INTEGER PRIMARY KEY, tag TEXT NOT NULL, value TEXT NOT NULL);
CREATE TABLE rocpd_string_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (id INTEGER PRIMARY KEY, string TEXT NOT NULL UNIQUE);
CREATE TABLE rocpd_info_node_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (id INTEGER PRIMARY KEY, hostname TEXT);
CREATE TABLE rocpd_info_process_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (
    id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, init BIGINT, fini BIGINT,
    start BIGINT, "end" BIGINT, command TEXT);
CREATE TABLE rocpd_info_agent_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (
    id INTEGER PRIMARY KEY, type TEXT, absolute_index INTEGER, logical_index INTEGER,
    type_index INTEGER, name TEXT, model_name TEXT, product_name TEXT);
CREATE TABLE rocpd_info_kernel_symbol_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (
    id INTEGER PRIMARY KEY, kernel_name TEXT, display_name TEXT, extdata JSONB);
CREATE TABLE rocpd_kernel_dispatch_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (
    id INTEGER PRIMARY KEY, agent_id INTEGER, kernel_id INTEGER, start BIGINT, "end" BIGINT,
    tid INTEGER, queue_id INTEGER, stream_id INTEGER, correlation_id INTEGER,
    workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER,
    grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER);
CREATE TABLE rocpd_memory_copy_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (
    id INTEGER PRIMARY KEY, src_agent_id INTEGER, dst_agent_id INTEGER, size INTEGER,
    start BIGINT, "end" BIGINT);
CREATE TABLE rocpd_region_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (
    id INTEGER PRIMARY KEY, name_id INTEGER, start BIGINT, "end" BIGINT);
CREATE VIEW rocpd_metadata AS SELECT * FROM rocpd_metadata_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW rocpd_string AS SELECT * FROM rocpd_string_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW rocpd_info_node AS SELECT * FROM rocpd_info_node_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW rocpd_info_process AS SELECT * FROM rocpd_info_process_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW rocpd_info_agent AS SELECT * FROM rocpd_info_agent_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW rocpd_info_kernel_symbol AS SELECT * FROM rocpd_info_kernel_symbol_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW rocpd_memory_copy AS SELECT * FROM rocpd_memory_copy_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW rocpd_region AS SELECT * FROM rocpd_region_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5;
CREATE VIEW kernels AS
    SELECT K.id, K.tid, S.display_name AS name, K.agent_id, A.absolute_index AS agent_absolute_index,
        A.type_index AS agent_type_index, K.kernel_id, K.id AS dispatch_id, K.queue_id,
        K.stream_id, K.start, K."end", K."end" - K.start AS duration,
        K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
        K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y,
        K.workgroup_size_z AS workgroup_z, K.correlation_id
    FROM rocpd_kernel_dispatch K
    JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id
    JOIN rocpd_info_agent A ON A.id = K.agent_id;
CREATE VIEW memory_copies AS
    SELECT M.id, M.start, M."end", M."end" - M.start AS duration, M.size,
        M.src_agent_id, M.dst_agent_id
    FROM rocpd_memory_copy M;
INSERT INTO rocpd_metadata_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (tag, value) VALUES ('schema_version', '3');
INSERT INTO rocpd_info_node_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES (1, 'node-1');
INSERT INTO rocpd_info_agent_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES
    (1, 'CPU', 0, 0, 0, 'AMD EPYC 9654', 'AMD EPYC 9654', 'AMD EPYC 9654'),
    (2, 'GPU', 1, 1, 0, 'gfx942', 'aqua_vanjaram', 'AMD Instinct MI300X');
INSERT INTO rocpd_string_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES (1, 'hipLaunchKernel'), (2, 'hipMemcpyAsync');
INSERT INTO rocpd_region_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES (1, 1, 1200, 1290), (2, 1, 2900, 2990), (3, 2, 4900, 4950);
"#;

/// A rocpd database of one process (pid 1234, 1000..9000 ns) on an MI300X:
/// two GEMM kernels, an RCCL all-reduce (its symbol's display name the
/// formatted one, with its arguments, as rocprofv3 writes it; the truncated
/// one in `extdata`) and a host-to-device copy; with
/// `api_only`, only its HIP API calls (rocprofv3 run without
/// `--kernel-trace`).
fn rocpd(api_only: bool) -> Vec<u8> {
    let db = rusqlite::Connection::open_in_memory().expect("an in-memory database");
    db.execute_batch(ROCPD_SCHEMA).expect("the rocpd schema");
    db.execute_batch(
        "INSERT INTO rocpd_info_process_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES \
         (1, 1234, 1000, 9000, 1000, 9000, 'python3 train.py');",
    )
    .expect("the process");
    if !api_only {
        db.execute_batch(
            r#"INSERT INTO rocpd_info_kernel_symbol_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES
                (1, 'Cijk_Alik_Bljk_HHS_BH_MT64x64x32.kd', 'Cijk_Alik_Bljk_HHS_BH_MT64x64x32',
                    '{"formatted_kernel_name": "Cijk_Alik_Bljk_HHS_BH_MT64x64x32", "truncated_kernel_name": "Cijk_Alik_Bljk_HHS_BH_MT64x64x32"}'),
                (2, 'ncclDevKernel_Generic.kd', 'ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)',
                    '{"formatted_kernel_name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "truncated_kernel_name": "ncclDevKernel_Generic"}');
            INSERT INTO rocpd_kernel_dispatch_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES
                (1, 2, 1, 1300, 1800, 1234, 1, 0, 2, 256, 1, 1, 65536, 1, 1),
                (2, 2, 1, 3000, 3400, 1234, 1, 0, 3, 256, 1, 1, 65536, 1, 1),
                (3, 2, 2, 3200, 4200, 1234, 2, 0, 4, 512, 1, 1, 512, 1, 1);
            INSERT INTO rocpd_memory_copy_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES (1, 1, 2, 1048576, 5000, 5600);"#,
        )
        .expect("the GPU records");
    }
    db.serialize(rusqlite::MAIN_DB).expect("the database's bytes").to_vec()
}

/// A protobuf message, written field by field with prost's encoding.
#[derive(Default)]
pub(crate) struct Pb(pub(crate) Vec<u8>);

impl Pb {
    pub(crate) fn uint(mut self, tag: u32, value: u64) -> Pb {
        prost::encoding::uint64::encode(tag, &value, &mut self.0);
        self
    }

    pub(crate) fn bytes(mut self, tag: u32, value: &[u8]) -> Pb {
        prost::encoding::bytes::encode(tag, &value.to_vec(), &mut self.0);
        self
    }

    pub(crate) fn msg(self, tag: u32, message: Pb) -> Pb {
        self.bytes(tag, &message.0)
    }

    /// `Interned` entries (`EventCategory`, `EventName`,
    /// `DebugAnnotationName`: `iid` = 1, `name` = 2) under `tag`.
    pub(crate) fn interned(self, tag: u32, names: &[(u64, &str)]) -> Pb {
        names.iter().fold(self, |pb, &(iid, name)| {
            pb.msg(tag, Pb::default().uint(1, iid).bytes(2, name.as_bytes()))
        })
    }
}

/// A slice of the rocprofv3-like Perfetto trace: sequence, track,
/// category, name, begin and end (ns).
type Slice = (u64, u64, &'static str, &'static str, u64, u64);

/// The records of the synthetic rocpd database (`rocpd`) as rocprofv3's
/// Perfetto trace holds them, with the HIP API calls around them: one slice
/// per record (a `SLICE_BEGIN` and a `SLICE_END` packet), the API calls on
/// sequence 1 (track 100), the GPU's on sequence 2 (a queue each, tracks 200
/// and 201; copies on 300), timestamps on the incremental clock 64 each
/// sequence defines (TrackEvent = 11 of TracePacket: `type` = 9,
/// `track_uuid` = 11, `category_iids` = 3, `categories` = 22, `name_iid` =
/// 10, `name` = 23, `debug_annotations` = 4).
/// `annotated`: as rocprofv3 writes it, every name interned, each slice with
/// its `begin_ns` and `end_ns` debug annotations (kernels their `agent` too,
/// as `--agent-index type-relative` writes it: `GPU-0`), and sequence 2's state
/// cleared and interned anew before its copy. Without, names and categories
/// are written out, times are the packets' only, and sequence 2's packets
/// are zlib `compressed_packets`.
fn pftrace(annotated: bool) -> Vec<u8> {
    const SLICES: [Slice; 10] = [
        (1, 100, "hip_api", "hipInit", 1000, 1100),
        (1, 100, "hip_api", "hipLaunchKernel", 1200, 1250),
        (1, 100, "hip_api", "hipLaunchKernel", 2900, 2950),
        (1, 100, "hip_api", "hipLaunchKernel", 3100, 3150),
        (1, 100, "hip_api", "hipMemcpyAsync", 4900, 4950),
        (1, 100, "hip_api", "hipDeviceSynchronize", 8900, 9000),
        (2, 200, "kernel_dispatch", "Cijk_Alik_Bljk_HHS_BH_MT64x64x32", 1300, 1800),
        (2, 200, "kernel_dispatch", "Cijk_Alik_Bljk_HHS_BH_MT64x64x32", 3000, 3400),
        (
            2,
            201,
            "kernel_dispatch",
            "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
            3200,
            4200,
        ),
        (2, 300, "memory_copy", "MEMORY_COPY_DEVICE_TO_HOST", 5000, 5600),
    ];
    // Each sequence's events in time order: (time, begins, slice).
    let mut trace = Vec::new();
    for sequence in [1u64, 2] {
        let mut events: Vec<(u64, bool, &Slice)> = SLICES
            .iter()
            .filter(|s| s.0 == sequence)
            .flat_map(|s| [(s.4, true, s), (s.5, false, s)])
            .collect();
        events.sort_by_key(|&(time, begins, _)| (time, !begins));
        let mut iids: Vec<&str> = Vec::new();
        let mut packets = Vec::new();
        let mut last = 0;
        // A sequence's first packet (or one that clears its state): the
        // strings its events name by iid, its default clock (64) and that
        // clock's start.
        let first = |packet: Pb, base: u64, iids: &[&'static str]| {
            let categories = SLICES.map(|s| s.2);
            let (mut cats, mut names) = (Vec::new(), Vec::new());
            for (i, &n) in iids.iter().enumerate() {
                let into = if categories.contains(&n) { &mut cats } else { &mut names };
                into.push((i as u64 + 1, n));
            }
            let interned = Pb::default().interned(1, &cats).interned(2, &names);
            let interned =
                interned.interned(3, &[(1000, "begin_ns"), (1001, "end_ns"), (1002, "agent")]);
            let clock = |id: u64| Pb::default().uint(1, id).uint(2, base);
            packet
                .uint(13, 1 | 2)
                .msg(12, interned)
                .msg(59, Pb::default().uint(58, 64))
                .msg(6, Pb::default().msg(1, clock(6)).msg(1, clock(64).uint(3, 1)))
        };
        for (i, &(time, begins, slice)) in events.iter().enumerate() {
            let &(_, track, category, name, begin, end) = slice;
            // rocprofv3 clears sequence 2's state before its copies.
            let clear = annotated && sequence == 2 && category == "memory_copy" && begins;
            if i == 0 || clear {
                iids = SLICES
                    .iter()
                    .filter(|s| s.0 == sequence && (!clear || s.2 == "memory_copy"))
                    .flat_map(|s| [s.2, s.3])
                    .fold(Vec::new(), |mut v, n| {
                        if !v.contains(&n) {
                            v.push(n);
                        }
                        v
                    });
                last = time;
            }
            let mut event = Pb::default().uint(9, if begins { 1 } else { 2 }).uint(11, track);
            if begins {
                let iid = |n: &str| iids.iter().position(|i| *i == n).unwrap() as u64 + 1;
                event = if annotated {
                    event.uint(3, iid(category)).uint(10, iid(name))
                } else {
                    event.bytes(22, category.as_bytes()).bytes(23, name.as_bytes())
                };
                if annotated {
                    for (annotation, value) in [(1000, begin), (1001, end)] {
                        event = event.msg(4, Pb::default().uint(1, annotation).uint(3, value));
                    }
                    if category == "kernel_dispatch" {
                        let agent = Pb::default().uint(1, 1002).bytes(6, b"GPU-0");
                        event = event.msg(4, agent);
                    }
                }
            }
            let mut packet = Pb::default().uint(10, sequence).uint(8, time - last);
            if i == 0 || clear {
                packet = first(packet, time, &iids);
            }
            last = time;
            packets.push(packet.msg(11, event));
        }
        let packets = packets.into_iter().fold(Pb::default(), |pb, packet| pb.msg(1, packet));
        if !annotated && sequence == 2 {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), Compression::best());
            z.write_all(&packets.0).expect("in-memory write");
            let compressed = z.finish().expect("in-memory zlib");
            trace.extend(Pb::default().msg(1, Pb::default().bytes(50, &compressed)).0);
        } else {
            trace.extend(packets.0);
        }
    }
    trace
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    // mtime 0 and no file name: the same bytes on every run.
    let mut e = GzBuilder::new().mtime(0).write(Vec::new(), Compression::best());
    e.write_all(bytes).expect("in-memory write");
    e.finish().expect("in-memory gzip")
}

pub(crate) fn all() -> Vec<Fixture> {
    let run = |p: &'static str| p;
    let mut ctrl = kineto("", None, false, true).into_bytes();
    // Kineto writes Python names raw: a tab and 0x01 inside a python_function
    // name, and a lone surrogate escape in an argument.
    let at = find(&ctrl, b"): step").expect("marker") + 2;
    ctrl.splice(at..at, b"\t\x01".iter().copied());
    let at = find(&ctrl, b"\"Python parent id\": 0").expect("marker");
    ctrl.splice(at..at, b"\"Concrete Inputs\": \"\\ud800\", ".iter().copied());

    vec![
        Fixture {
            path: run("run/torch_profiler_output/libkineto_trace_rank0_1.json"),
            bytes: kineto("", Some((0, 2)), false, true).into_bytes(),
            how: "Kineto layout, rank 0 of 2 in its name and its distributedInfo, one GPU kernel",
        },
        Fixture {
            path: run("run/torch_profiler_output/libkineto_trace_rank1_2.json"),
            bytes: kineto("", Some((1, 2)), false, true).into_bytes(),
            how: "as above, rank 1 of 2",
        },
        Fixture {
            path: run("run/torch_profiler_output/libkineto_trace_4242.json"),
            bytes: kineto("", Some((1, 2)), true, false).into_bytes(),
            how: "an on-demand (dynolog) trace named by pid: no GPU events (the torchrun launcher), distributedInfo after traceEvents",
        },
        Fixture {
            path: run("run/traces/model_rank2.pt.trace.json.gz"),
            bytes: gz(kineto("", Some((2, 4)), false, true).as_bytes()),
            how: "gzip (mtime 0) of a Kineto trace, rank 2 of 4 in its name",
        },
        Fixture {
            path: run("run/node_0/rank0.json.gz"),
            bytes: gz(kineto("", Some((0, 4)), false, true).as_bytes()),
            how: "a Kineto trace whose name matches no pattern: claimed by content",
        },
        Fixture {
            path: run("run/node_0/host_4242.json"),
            bytes: {
                let mut s = String::from("{\"metadata\": {\"note\": \"");
                s.push_str(&"x".repeat(6000));
                s.push_str("\"},\n");
                s.push_str(&kineto("", Some((3, 4)), false, true)[3..]);
                s.into_bytes()
            },
            how: "re-saved by Python with a leading 6 KB metadata object: traceEvents lies past the original's 4 KiB sniff, inside our 64 KiB head",
        },
        Fixture {
            path: run("run/rpd_output/trace.json"),
            bytes: kineto("", None, false, true).into_bytes(),
            how: "rpd's converted Chrome trace under the ambiguous name trace.json (sniffed)",
        },
        Fixture {
            path: run("run/rocm_trace_lite_output/trace.json"),
            bytes: b"{\"format\": \"rocm-trace-lite\", \"events\": []}\n".to_vec(),
            how: "rocm-trace-lite's own format under the name trace.json: not a Chrome trace",
        },
        Fixture {
            path: run("run/rocprof_output/9999_results.json"),
            bytes: rocprofv3(b"\xa0\x91\x7f\x00\xff\xfe"),
            how: "rocprofv3 JSON whose hipModuleGetFunction kname holds raw pointer bytes (invalid UTF-8 and control bytes)",
        },
        Fixture {
            path: run("run/rocprof_output/model_trace.pftrace"),
            bytes: vec![0x0a, 0x04, 0x40, 0x01, 0x50, 0x01],
            how: "a minimal Perfetto packet (field 1, 4 bytes)",
        },
        Fixture {
            path: run("run/rocprof_output/1e4d92661463/1234_results.db"),
            bytes: rocpd(false),
            how: "a rocpd database (rocprofv3's default SQLite output) of one MI300X process: two GEMM kernels, an RCCL all-reduce, a copy; TraceLens cannot read it, `report summary` can, and `report tracelens` writes it as rocprofv3 JSON for TraceLens",
        },
        Fixture {
            path: run("pftrace/rocprofv3/1234_results.pftrace"),
            bytes: pftrace(true),
            how: "the records of the rocpd database above as rocprofv3's Perfetto trace holds them (--output-format pftrace): one slice per record, names interned, begin_ns/end_ns annotations (and the kernels' agent, GPU-0, as --agent-index type-relative writes it), incremental timestamps, with HIP API calls spanning 1000..9000 ns",
        },
        Fixture {
            path: run("pftrace/timestamps/1234_results.pftrace"),
            bytes: pftrace(false),
            how: "the same slices timed by their packets' incremental timestamps only, names written out, the GPU's packets zlib compressed_packets",
        },
        Fixture {
            path: run("rocpd/api_only/4321_results.db"),
            bytes: rocpd(true),
            how: "a rocpd database holding only HIP API calls (rocprofv3 run without --kernel-trace)",
        },
        Fixture {
            path: run("run/rpd_output/trace.rpd"),
            bytes: b"SQLite format 3\0".to_vec(),
            how: "RPD database header: unsupported",
        },
        Fixture {
            path: run("run/jax/plugins/profile/host.xplane.pb"),
            bytes: vec![0x0a, 0x00],
            how: "JAX XPlane protobuf stand-in: unsupported",
        },
        Fixture {
            path: run("run/broken/python_names.pt.trace.json"),
            bytes: ctrl,
            how: "Kineto trace with a raw tab and 0x01 in a python_function name and a lone surrogate escape in Concrete Inputs",
        },
        Fixture {
            path: run("run/tracelens_output/stale_results.json"),
            bytes: b"{\"rocprofiler-sdk-tool\": []}\n".to_vec(),
            how: "a previous report's file: excluded with --exclude tracelens_output",
        },
        Fixture {
            path: run("run/.cache/hidden.pt.trace.json"),
            bytes: kineto("", None, false, true).into_bytes(),
            how: "under a hidden directory: never matched by the glob patterns",
        },
        Fixture {
            path: run("run/node_modules/pkg/vendored.pt.trace.json"),
            bytes: kineto("", None, false, false).into_bytes(),
            how: "under a skip-list directory: still matched by name (the skip list only limits sniffing)",
        },
        Fixture {
            path: run("run/manifest.json"),
            bytes: b"{\"built_models\": {}}\n".to_vec(),
            how: "plain JSON, not a trace",
        },
        Fixture {
            path: run("run/perf.csv"),
            bytes: b"model,performance,metric\ndummy,1.0,samples/s\n".to_vec(),
            how: "not a trace",
        },
    ]
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub(crate) fn dir(root: &Path) -> PathBuf {
    root.join("fixtures/synthetic")
}

/// Write every fixture (and remove strays); with `check`, only compare.
pub(crate) fn run(root: &Path, check: bool) -> Result<(), String> {
    let base = dir(root);
    let fixtures = all();
    let mut stale = Vec::new();
    for f in &fixtures {
        let path = base.join(f.path);
        if fs::read(&path).ok().as_deref() == Some(&f.bytes[..]) {
            continue;
        }
        if check {
            stale.push(f.path.to_string());
            continue;
        }
        fs::create_dir_all(path.parent().expect("has a parent"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        fs::write(&path, &f.bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let wanted: Vec<PathBuf> = fixtures.iter().map(|f| base.join(f.path)).collect();
    for path in files_under(&base) {
        if !wanted.contains(&path) {
            if check {
                stale.push(format!("{} (not generated)", path.display()));
            } else {
                fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
    }
    let readme = readme(&fixtures);
    let readme_path = root.join("fixtures/README.md");
    let current = fs::read_to_string(&readme_path).unwrap_or_default();
    let updated = splice_readme(&current, &readme);
    if updated != current {
        if check {
            stale.push("fixtures/README.md".into());
        } else {
            fs::write(&readme_path, updated)
                .map_err(|e| format!("{}: {e}", readme_path.display()))?;
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!("fixtures are stale; run `cargo xtask fixtures`:\n  {}", stale.join("\n  ")))
    }
}

/// Every file under `dir`, recursively, sorted.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() { out.extend(files_under(&p)) } else { out.push(p) }
        }
    }
    out.sort();
    out
}

const BEGIN: &str = "<!-- BEGIN synthetic (generated by `cargo xtask fixtures`) -->";
const END: &str = "<!-- END synthetic -->";

fn readme(fixtures: &[Fixture]) -> String {
    let mut s = format!(
        "{BEGIN}\n| file (under `fixtures/synthetic/`) | bytes | how it was made |\n|---|---|---|\n"
    );
    for f in fixtures {
        s.push_str(&format!("| `{}` | {} | {} |\n", f.path, f.bytes.len(), f.how));
    }
    s.push_str(END);
    s
}

fn splice_readme(current: &str, table: &str) -> String {
    match (current.find(BEGIN), current.find(END)) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{}{}", &current[..a], table, &current[b + END.len()..])
        }
        _ => format!("{}{table}\n", current),
    }
}
