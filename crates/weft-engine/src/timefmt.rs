//! RFC 3339 timestamps (UTC, milliseconds) from the store's epoch milliseconds.
//!
//! Hand-written rather than a date crate because the record needs exactly one format and the
//! conversion is a dozen lines (days → civil date, H. Hinnant's algorithm).

/// `2026-11-30T02:46:14.123Z` for `ms` milliseconds since the Unix epoch.
pub fn rfc3339_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, rest) = (in_day / 3_600_000, in_day % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// Milliseconds since the Unix epoch of an RFC 3339 date-time (`2026-12-01T17:00:00Z`,
/// `2026-12-01T18:00:00.5+01:00`): the schema's `date-time` of a `deadline`. `None` when
/// it is not one.
pub fn parse_rfc3339_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = text.get(from..from + len)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let sep = |at: usize, c: &[u8]| b.get(at).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, s) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut at = 19;
    let mut milli = 0;
    if sep(at, b".") {
        let digits = b[at + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        let frac = &text[at + 1..at + 1 + digits.min(3)];
        milli = format!("{frac:0<3}").parse().ok()?;
        at += 1 + digits;
    }
    let offset_min = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(c @ (b'+' | b'-')) if at + 6 == b.len() && sep(at + 3, b":") => {
            let m = num(at + 1, 2)? * 60 + num(at + 4, 2)?;
            if *c == b'-' { -m } else { m }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60;
    Some(secs * 1000 + milli)
}

/// Days since 1970-01-01 of a (proleptic Gregorian) civil date: the inverse of
/// [`civil_from_days`].
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_parses_to_the_instant_it_names() {
        for ms in [0, 951_782_400_123, 1_796_006_774_005, -1] {
            assert_eq!(parse_rfc3339_ms(&rfc3339_ms(ms)), Some(ms), "{ms}");
        }
        assert_eq!(
            parse_rfc3339_ms("2026-11-30T03:46:14+01:00"),
            Some(1_796_006_774_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-11-30T02:46:14.5Z"),
            Some(1_796_006_774_500)
        );
        for bad in [
            "2026-11-30",
            "2026-13-01T00:00:00Z",
            "2026-11-30T02:46:14",
            "soon",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339_ms(1_796_006_774_005), "2026-11-30T02:46:14.005Z");
        assert_eq!(rfc3339_ms(-1), "1969-12-31T23:59:59.999Z");
    }
}
