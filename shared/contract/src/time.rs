//! Time stamps as the journal writes them: UTC, RFC 3339, milliseconds.

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// Now, as `2026-11-30T07:00:00.123Z`.
pub fn now_rfc3339() -> String {
    rfc3339(Timestamp::now())
}

/// `ts` as `2026-11-30T07:00:00.123Z`.
pub fn rfc3339(ts: Timestamp) -> String {
    let t = TimeZone::UTC.to_datetime(ts);
    if !(0..=9999).contains(&t.year()) {
        return ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    }
    // Written by hand: strftime interprets its format on every call, and
    // capture stamps every record.
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.subsec_nanosecond() / 1_000_000
    )
}

/// `ts` as a journal file stem, `20261130T070000.123Z`, whose byte order is
/// time order.
pub fn file_stamp(ts: Timestamp) -> String {
    ts.strftime("%Y%m%dT%H%M%S%.3fZ").to_string()
}

/// The UTC calendar day of `ts`, as `20261130`.
pub fn utc_day(ts: Timestamp) -> String {
    ts.strftime("%Y%m%d").to_string()
}

/// Parses an RFC 3339 time stamp (any offset).
pub fn parse(text: &str) -> Option<Timestamp> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_millis() {
        let ts: Timestamp = "2026-11-30T07:00:00.123456Z".parse().unwrap();
        assert_eq!(rfc3339(ts), "2026-11-30T07:00:00.123Z");
        assert_eq!(file_stamp(ts), "20261130T070000.123Z");
        let whole: Timestamp = "2026-11-30T07:00:00Z".parse().unwrap();
        assert_eq!(rfc3339(whole), "2026-11-30T07:00:00.000Z");
        for text in ["0000-01-01T00:00:00.999Z", "9999-12-30T12:34:56.001Z"] {
            let ts: Timestamp = text.parse().unwrap();
            assert_eq!(
                rfc3339(ts),
                ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
            );
        }
    }
}
