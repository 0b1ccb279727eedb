//! The promotion score and everything it is made of.
//!
//! score = W · R · (0.5 + 0.25·min(1, log2(1+T)/4) + 0.25·min(1, (B−1)/4))
//! with W the 95% Wilson lower bound of the failure rate, R a 14-day
//! half-life decay since the last failure, T the median failure-window
//! length in turns and B the blast radius in distinct tools. Pure
//! functions only, so the figures can be checked by hand.

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.96;

/// Days for the recency factor to halve.
pub const HALF_LIFE_DAYS: f64 = 14.0;

/// Lower bound of the Wilson score interval for `failures` of `calls`.
pub fn wilson_lower(failures: u64, calls: u64) -> f64 {
    if calls == 0 {
        return 0.0;
    }
    let n = calls as f64;
    let p = failures.min(calls) as f64 / n;
    let z2 = Z95 * Z95;
    let centre = p + z2 / (2.0 * n);
    let spread = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - spread) / (1.0 + z2 / n)).max(0.0)
}

/// `0.5 ^ (age_days / 14)`; a failure in the future counts as now.
pub fn recency(age_days: f64) -> f64 {
    0.5f64.powf(age_days.max(0.0) / HALF_LIFE_DAYS)
}

/// The median of `values` (mean of the middle two for an even count);
/// 0 for none.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The inputs of one group's score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Signals {
    /// Failures of the group.
    pub failures: u64,
    /// All calls to the group's (server, tool).
    pub calls: u64,
    /// Days since the group's last failure.
    pub age_days: f64,
    /// Median turns of the group's failure windows (T).
    pub median_turns: f64,
    /// Distinct tools failing inside the group's windows (B).
    pub blast_radius: u64,
}

impl Signals {
    /// The score in [0, 1].
    pub fn score(&self) -> f64 {
        let w = wilson_lower(self.failures, self.calls);
        let r = recency(self.age_days);
        let cost = 0.25 * ((1.0 + self.median_turns.max(0.0)).log2() / 4.0).min(1.0);
        let reach = 0.25 * ((self.blast_radius.max(1) - 1) as f64 / 4.0).min(1.0);
        (w * r * (0.5 + cost + reach)).clamp(0.0, 1.0)
    }
}

crate::spelling::spelled! {
    /// How bad a finding is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    pub enum Severity {
        /// score < [`Severity::MEDIUM`]
        Low = "low",
        /// [`Severity::MEDIUM`] ≤ score < [`Severity::HIGH`], or capped
        /// here without an attached probe
        Medium = "medium",
        /// score ≥ [`Severity::HIGH`] with an attached probe
        High = "high",
    }
}

impl Severity {
    /// The least score that is high. The score is a conservative failure
    /// rate, discounted for age and weighted by cost, so it is small: a
    /// fresh, costly failure of one call in ten scores about this much.
    pub const HIGH: f64 = 0.08;
    /// The least score that is medium.
    pub const MEDIUM: f64 = 0.02;

    /// Severity of `score`; without an attached probe it is capped at medium.
    pub fn of(score: f64, probe_attached: bool) -> Severity {
        let raw = if score >= Severity::HIGH {
            Severity::High
        } else if score >= Severity::MEDIUM {
            Severity::Medium
        } else {
            Severity::Low
        };
        if probe_attached {
            raw
        } else {
            raw.min(Severity::Medium)
        }
    }
}

/// Repeated-probe attempts: `ceil(ln 0.05 / ln(1 − p))` for failure rate
/// `p`, at least 3, at most `cap` (100 for degradation, 20 for error
/// honesty).
pub fn attempts(p: f64, cap: u32) -> u32 {
    let p = if p.is_finite() {
        p.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let n = if p <= 0.0 {
        f64::INFINITY
    } else if p >= 1.0 {
        1.0
    } else {
        (0.05f64.ln() / (1.0 - p).ln()).ceil()
    };
    (n.min(f64::from(cap)) as u32).max(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn wilson_matches_hand_values() {
        // p = 0.5, n = 10: (0.5 + 0.19208 − 1.96·√(0.025 + 0.009604)) / 1.38416
        let z2 = 1.96f64 * 1.96;
        let want = (0.5 + z2 / 20.0 - 1.96 * (0.025 + z2 / 400.0).sqrt()) / (1.0 + z2 / 10.0);
        close(wilson_lower(5, 10), want);
        close(wilson_lower(5, 10), 0.236_589_593_615_487_3);
        close(wilson_lower(0, 10), 0.0);
        close(wilson_lower(0, 0), 0.0);
    }

    #[test]
    fn recency_halves_every_fourteen_days() {
        close(recency(0.0), 1.0);
        close(recency(14.0), 0.5);
        close(recency(28.0), 0.25);
        close(recency(-3.0), 1.0);
    }

    #[test]
    fn score_combines_the_four_signals() {
        let s = Signals {
            failures: 5,
            calls: 10,
            age_days: 14.0,
            median_turns: 3.0,
            blast_radius: 3,
        };
        // W · 0.5 · (0.5 + 0.25·(2/4) + 0.25·(2/4))
        close(s.score(), wilson_lower(5, 10) * 0.5 * 0.75);
        let capped = Signals {
            median_turns: 100.0,
            blast_radius: 40,
            ..s
        };
        close(capped.score(), wilson_lower(5, 10) * 0.5 * 1.0);
    }

    #[test]
    fn medians() {
        close(median(&mut [3.0, 1.0, 2.0]), 2.0);
        close(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        close(median(&mut []), 0.0);
    }

    #[test]
    fn severity_is_capped_without_probe() {
        assert_eq!(Severity::of(0.9, false), Severity::Medium);
        assert_eq!(Severity::of(0.9, true), Severity::High);
        assert_eq!(Severity::of(0.08, false), Severity::Medium);
        assert_eq!(Severity::of(0.01, false), Severity::Low);
    }

    #[test]
    fn severity_thresholds_are_the_contracts() {
        assert_eq!(Severity::of(0.08, true), Severity::High);
        assert_eq!(Severity::of(0.0799, true), Severity::Medium);
        assert_eq!(Severity::of(0.02, true), Severity::Medium);
        assert_eq!(Severity::of(0.0199, true), Severity::Low);
        assert_eq!(Severity::of(0.0, true), Severity::Low);
    }

    #[test]
    fn a_fresh_costly_failure_of_one_call_in_ten_is_high() {
        // 100 failures of 1,000 calls today, each costing 15 turns and
        // reaching 5 tools: the score is the Wilson bound itself, 0.083.
        let costly = Signals {
            failures: 100,
            calls: 1000,
            age_days: 0.0,
            median_turns: 15.0,
            blast_radius: 5,
        };
        assert_eq!(Severity::of(costly.score(), true), Severity::High);
        // The same rate at the least cost (one turn, one tool) is medium.
        let cheap = Signals {
            median_turns: 1.0,
            blast_radius: 1,
            ..costly
        };
        assert_eq!(Severity::of(cheap.score(), true), Severity::Medium);
    }

    #[test]
    fn attempt_counts() {
        assert_eq!(attempts(0.3, 100), 9); // ln .05 / ln .7 = 8.4
        assert_eq!(attempts(0.9, 100), 3);
        assert_eq!(attempts(0.01, 100), 100); // 298 capped
        assert_eq!(attempts(0.01, 20), 20);
        assert_eq!(attempts(0.0, 100), 100);
    }
}
