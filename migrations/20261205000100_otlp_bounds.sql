-- Bounds on OTLP span windows: who opened each window (the user behind the API token),
-- so windows per user can be counted, and an index to count windows by recency.
ALTER TABLE otlp_windows ADD COLUMN opened_by BIGINT REFERENCES users (id) ON DELETE SET NULL;
CREATE INDEX otlp_windows_by_end ON otlp_windows (window_end);
