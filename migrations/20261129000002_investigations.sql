-- Investigations (steps 0–7), their history, attached estimates, and the journal.
CREATE TABLE investigations (
    id          BIGSERIAL PRIMARY KEY,
    title       TEXT NOT NULL CHECK (length(btrim(title)) BETWEEN 1 AND 200),
    service     TEXT NOT NULL DEFAULT '',
    symptom     TEXT NOT NULL DEFAULT '',
    tags        TEXT[] NOT NULL DEFAULT '{}',
    status      TEXT NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'diagnosed', 'resolved', 'abandoned')),
    owner_id    BIGINT NOT NULL REFERENCES users (id),
    -- set on example content, so loading it twice finds the first copy
    demo_key    TEXT UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX investigations_updated ON investigations (updated_at DESC);

-- One row per recorded step; `data` is the step's typed record as JSON.
CREATE TABLE investigation_steps (
    investigation_id BIGINT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    step        SMALLINT NOT NULL CHECK (step BETWEEN 0 AND 7),
    data        JSONB NOT NULL,
    updated_by  BIGINT NOT NULL REFERENCES users (id),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (investigation_id, step)
);

-- An estimate attached to a step as its expected value.
CREATE TABLE investigation_expected (
    investigation_id BIGINT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    step        SMALLINT NOT NULL CHECK (step BETWEEN 0 AND 7),
    estimator   TEXT NOT NULL,
    inputs      JSONB NOT NULL,
    result_key  TEXT NOT NULL,
    expected    DOUBLE PRECISION NOT NULL,
    unit        TEXT NOT NULL DEFAULT '',
    observed    DOUBLE PRECISION,
    attached_by BIGINT NOT NULL REFERENCES users (id),
    attached_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (investigation_id, step)
);

-- A step opened before the steps it builds on were recorded.
CREATE TABLE investigation_skips (
    investigation_id BIGINT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    step        SMALLINT NOT NULL CHECK (step BETWEEN 0 AND 7),
    missing     SMALLINT[] NOT NULL,
    reason      TEXT NOT NULL,
    user_id     BIGINT NOT NULL REFERENCES users (id),
    at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (investigation_id, step)
);

-- Who changed what, when.
CREATE TABLE investigation_events (
    id          BIGSERIAL PRIMARY KEY,
    investigation_id BIGINT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    user_id     BIGINT NOT NULL REFERENCES users (id),
    at          TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    action      TEXT NOT NULL,
    step        SMALLINT,
    summary     TEXT NOT NULL
);
CREATE INDEX investigation_events_by_investigation ON investigation_events (investigation_id, id DESC);

CREATE TABLE journal_entries (
    id          BIGSERIAL PRIMARY KEY,
    investigation_id BIGINT REFERENCES investigations (id) ON DELETE SET NULL,
    title       TEXT NOT NULL CHECK (length(btrim(title)) BETWEEN 1 AND 200),
    entry_date  DATE NOT NULL,
    symptom     TEXT NOT NULL DEFAULT '',
    workload    TEXT NOT NULL DEFAULT '',
    baseline    TEXT NOT NULL DEFAULT '',
    diagnosis   TEXT NOT NULL DEFAULT '',
    change      TEXT NOT NULL DEFAULT '',
    result      TEXT NOT NULL DEFAULT '',
    quality     TEXT NOT NULL DEFAULT '',
    effort      TEXT NOT NULL DEFAULT '',
    -- NULL while the entry is a draft
    published_at TIMESTAMPTZ,
    author_id   BIGINT NOT NULL REFERENCES users (id),
    -- bumped by every save; a save naming an older version is refused (409)
    version     INTEGER NOT NULL DEFAULT 1,
    demo_key    TEXT UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- An investigation drafts one entry.
CREATE UNIQUE INDEX journal_entries_investigation ON journal_entries (investigation_id)
    WHERE investigation_id IS NOT NULL;
CREATE INDEX journal_entries_published ON journal_entries (entry_date DESC, published_at DESC)
    WHERE published_at IS NOT NULL;

-- Every saved version, so a refused stale save can show what changed since.
CREATE TABLE journal_revisions (
    entry_id    BIGINT NOT NULL REFERENCES journal_entries (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    fields      JSONB NOT NULL,
    user_id     BIGINT NOT NULL REFERENCES users (id),
    at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (entry_id, version)
);
