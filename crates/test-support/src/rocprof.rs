//! Small rocprofv3 traces (`<pid>_results.json`), one process each, for
//! the tests of runs of several GPUs and nodes.

/// A small rocprofv3 trace of process `pid` on a node of four GPUs (a
/// MI300X each) and a CPU: a GEMM of `gemm_us` and a collective of 100 µs,
/// dispatched on GPU `gpu`.
pub fn rocprof_process(pid: u32, gpu: u32, gemm_us: u64) -> String {
    rocprof_process_with(pid, gpu, gemm_us, 100)
}

/// [`rocprof_process`] with a collective of `comm_us` (from 600 µs in).
pub fn rocprof_process_with(pid: u32, gpu: u32, gemm_us: u64, comm_us: u64) -> String {
    let agents: Vec<String> = (0..4)
        .map(|i| {
            format!(
                r#"{{"id":{{"handle":{}}},"type":2,"node_id":{},"logical_node_type_id":{i},"name":"gfx942","product_name":"AMD Instinct MI300X"}}"#,
                10 + i,
                i + 1
            )
        })
        .collect();
    let dispatch = |id: u32, start: u64, end: u64| {
        format!(
            r#"{{"kind":11,"start_timestamp":{start},"end_timestamp":{end},"dispatch_info":{{"agent_id":{{"handle":{}}},"queue_id":{{"handle":1}},"kernel_id":{id}}}}}"#,
            10 + gpu
        )
    };
    format!(
        r#"{{"rocprofiler-sdk-tool":[{{"metadata":{{"pid":{pid},"init_time":0,"fini_time":1000000,"command":["python3","-u","train.py"]}},"agents":[{{"id":{{"handle":1}},"type":1,"node_id":0,"logical_node_type_id":0,"name":"AMD EPYC 9575F","product_name":"AMD EPYC 9575F"}},{}],"kernel_symbols":[{{"kernel_id":1,"kernel_name":"Cijk_Alik_Bljk_gemm.kd","truncated_kernel_name":"Cijk_Alik_Bljk_gemm"}},{{"kernel_id":2,"kernel_name":"ncclDevKernel_Generic_1"}}],"buffer_records":{{"kernel_dispatch":[{},{}],"memory_copy":[]}}}}]}}"#,
        agents.join(","),
        dispatch(1, 1000, 1000 + gemm_us * 1000),
        dispatch(2, 600_000, 600_000 + comm_us * 1000)
    )
}

/// [`rocprof_process`] written to `path` (its directories made).
pub fn write_rocprof_process(path: &std::path::Path, pid: u32, gpu: u32, gemm_us: u64) {
    write_rocprof(path, &rocprof_process(pid, gpu, gemm_us));
}

/// A trace written to `path` (its directories made).
pub fn write_rocprof(path: &std::path::Path, trace: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, trace).unwrap();
}

/// Under `dir`, each `(file, pid, gpu, gemm_us, comm_us)`: a
/// [`rocprof_process_with`] trace.
pub fn write_rocprof_processes(dir: &std::path::Path, processes: &[(&str, u32, u32, u64, u64)]) {
    for &(file, pid, gpu, gemm_us, comm_us) in processes {
        write_rocprof(&dir.join(file), &rocprof_process_with(pid, gpu, gemm_us, comm_us));
    }
}
