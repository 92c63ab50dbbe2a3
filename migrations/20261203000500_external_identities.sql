-- People who sign in through an OpenID provider or a trusted reverse proxy: each identity
-- (issuer, subject) belongs to one local user, created at its first sign-in (or linked to an
-- existing account when the operator allows it). `issuer` is the provider's issuer URL, or
-- `proxy:HEADER` for the reverse-proxy mode.
CREATE TABLE external_identities (
    id              BIGSERIAL PRIMARY KEY,
    issuer          TEXT NOT NULL,
    subject         TEXT NOT NULL,
    user_id         BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email           TEXT,
    -- the groups the provider named at the last sign-in (the role is mapped from them)
    groups          TEXT[] NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_sign_in_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (issuer, subject)
);
CREATE INDEX external_identities_user ON external_identities (user_id);
