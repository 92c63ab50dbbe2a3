-- Load-sweep summary tables (vLLM benchmark suite) are a kind of their own.
ALTER TABLE artifacts DROP CONSTRAINT artifacts_kind_check;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_kind_check
    CHECK (kind IN ('request_log', 'vllm_bench', 'prometheus', 'pytorch_trace', 'ncu_csv',
                    'nsys_kern_sum', 'gpu_telemetry', 'sweep', 'unknown'));
