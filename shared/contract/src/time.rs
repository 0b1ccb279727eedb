//! Time stamps as the journal writes them: UTC, RFC 3339, milliseconds.

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// Now, as `2026-11-30T07:00:00.123Z`.
pub fn now_rfc3339() -> String {
    rfc3339(Timestamp::now())
}

/// `ts` as `2026-11-30T07:00:00.123Z`.
pub fn rfc3339(ts: Timestamp) -> String {
    match fixed(ts) {
        Some(text) => String::from_utf8(text.to_vec()).expect("ASCII digits and separators"),
        None => ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
    }
}

/// The length of an [`rfc3339`] stamp in the years 0 to 9999.
pub const RFC3339_LEN: usize = 24;

/// [`rfc3339`] of `ts` in a buffer of its size; `None` outside the years
/// 0 to 9999, whose stamps are longer.
fn fixed(ts: Timestamp) -> Option<[u8; RFC3339_LEN]> {
    let t = TimeZone::UTC.to_datetime(ts);
    if !(0..=9999).contains(&t.year()) {
        return None;
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
    Some(out)
}

/// [`rfc3339`] stamps in buffers of their size, the date and time of day
/// of the last second stamped kept: times that come close together, as a
/// capture's calls do, are converted from the time line once a second,
/// and their milliseconds written each time.
#[derive(Debug, Default, Clone)]
pub struct Stamper {
    last: Option<(i64, [u8; RFC3339_LEN])>,
}

impl Stamper {
    /// The bytes of `rfc3339(ts)`; `None` outside the years 0 to 9999.
    pub fn stamp(&mut self, ts: Timestamp) -> Option<[u8; RFC3339_LEN]> {
        let (second, nanos) = (ts.as_second(), ts.subsec_nanosecond());
        // Before 1970 a fraction counts back from the second: not kept.
        if nanos < 0 {
            return fixed(ts);
        }
        let mut text = match self.last {
            Some((last, text)) if last == second => text,
            _ => {
                let text = fixed(ts)?;
                self.last = Some((second, text));
                text
            }
        };
        let millis = (nanos / 1_000_000) as u32;
        text[20] = b'0' + (millis / 100) as u8;
        text[21] = b'0' + (millis / 10 % 10) as u8;
        text[22] = b'0' + (millis % 10) as u8;
        Some(text)
    }
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

    #[test]
    fn a_stamper_stamps_as_rfc3339_does() {
        let mut stamper = Stamper::default();
        let mut check = |secs: i64, nanos: i32| {
            let ts = Timestamp::new(secs, nanos).unwrap();
            let stamped = stamper
                .stamp(ts)
                .map(|t| String::from_utf8(t.to_vec()).unwrap());
            let text = rfc3339(ts);
            let year = TimeZone::UTC.to_datetime(ts).year();
            assert_eq!(stamped.is_some(), (0..=9999).contains(&year), "{text}");
            if let Some(stamped) = stamped {
                assert_eq!(stamped, text);
            }
        };
        // In order within a second and across, back again, before 1970
        // (fractions count back there), and at the edges of the years
        // stamped: the first second of year 0, the last jiff holds.
        for (secs, nanos) in [
            (1_800_000_000, 0),
            (1_800_000_000, 1_000_000),
            (1_800_000_000, 999_999_999),
            (1_800_000_001, 5_000_000),
            (1_800_000_000, 123_456_789),
            (-1, -1),
            (-1, 0),
            (-2, -999_999_999),
            (-62_167_219_200, 0),
            (-62_167_219_201, 0),
            (253_402_207_199, 999_000_000),
            (253_402_207_200, 0),
            (0, 0),
        ] {
            check(secs, nanos);
        }
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut secs = 1_800_000_000;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            secs += (x % 3) as i64;
            check(secs, (x >> 34) as i32 % 1_000_000_000);
        }
    }
}
