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
    // Written digit by digit: strftime interprets its format on every
    // call and `format!` went through the formatting machinery for each
    // field, and capture stamps every record.
    let mut out = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: u32| {
        for place in out[at..at + width].iter_mut().rev() {
            *place = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, t.year() as u32);
    put(5, 2, t.month() as u32);
    put(8, 2, t.day() as u32);
    put(11, 2, t.hour() as u32);
    put(14, 2, t.minute() as u32);
    put(17, 2, t.second() as u32);
    put(20, 3, (t.subsec_nanosecond() / 1_000_000) as u32);
    String::from_utf8(out.to_vec()).expect("ASCII digits and separators")
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
        for text in [
            "0000-01-01T00:00:00.999Z",
            "9999-12-30T12:34:56.001Z",
            "1970-01-01T00:00:00Z",
            "2024-02-29T23:59:59.999999999Z",
            "2001-09-09T01:46:40.010Z",
            "0987-06-05T04:03:02.100Z",
        ] {
            let ts: Timestamp = text.parse().unwrap();
            assert_eq!(
                rfc3339(ts),
                ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
            );
        }
    }
}
