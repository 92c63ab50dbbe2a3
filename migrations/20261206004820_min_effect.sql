-- A verdict calls a move a change only when it reaches a minimum effect (percent of the
-- before value), set per investigation; smaller moves are "no change".
ALTER TABLE investigations
    ADD COLUMN min_effect_pct DOUBLE PRECISION NOT NULL DEFAULT 2.0
        CHECK (min_effect_pct >= 0 AND min_effect_pct <= 100);

ALTER TABLE comparisons DROP CONSTRAINT comparisons_verdict_check;
ALTER TABLE comparisons ADD CONSTRAINT comparisons_verdict_check
    CHECK (verdict IN ('confirmed', 'improved', 'inconclusive', 'no_change',
                       'invalid_comparison', 'regressed'));
