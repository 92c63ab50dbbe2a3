-- Nsight Systems reports exported to SQLite are an artifact kind of their own
-- ('nsys_sqlite'); the list keeps every kind earlier migrations allowed.
ALTER TABLE artifacts DROP CONSTRAINT artifacts_kind_check;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_kind_check
    CHECK (kind IN ('request_log', 'vllm_bench', 'prometheus', 'pytorch_trace', 'ncu_csv',
                    'nsys_kern_sum', 'nsys_sqlite', 'gpu_telemetry', 'sweep', 'unknown',
                    'otlp_spans', 'prometheus_range'));
