-- Training: drill attempts, self-check answers, blind-replay answers and the "good for
-- training" mark. Training writes only to these tables, never to investigations or the
-- journal.
CREATE TABLE training_attempts (
    id          BIGSERIAL PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('step', 'chain', 'regime', 'ranking', 'replay')),
    estimator   TEXT,
    -- the drill id (`decode-floor.42`), `regime.7`, `ranking.7` or `replay.<investigation>`
    drill       TEXT NOT NULL,
    answer      JSONB NOT NULL,
    -- NULL for answers that are not graded (replays)
    correct     BOOLEAN,
    at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX training_attempts_by_user ON training_attempts (user_id, at);

-- A learner's answer to a guide page's self-check question (the latest one).
CREATE TABLE training_checks (
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    page        TEXT NOT NULL,
    question    SMALLINT NOT NULL,
    answer      TEXT NOT NULL CHECK (length(answer) BETWEEN 1 AND 4000),
    at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, page, question)
);

-- A learner's diagnosis of a replayed investigation; steps 3-7 are shown once it exists.
CREATE TABLE training_replays (
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    investigation_id BIGINT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    diagnosis   TEXT NOT NULL CHECK (length(diagnosis) BETWEEN 1 AND 4000),
    next_measurement TEXT NOT NULL CHECK (length(next_measurement) BETWEEN 1 AND 4000),
    at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, investigation_id)
);

-- Investigations their author (or an admin) marked "good for training".
CREATE TABLE training_marks (
    investigation_id BIGINT PRIMARY KEY REFERENCES investigations (id) ON DELETE CASCADE,
    marked_by   BIGINT NOT NULL REFERENCES users (id),
    at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
