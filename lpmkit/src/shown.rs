//! Input echoed in error messages, cut to a readable length.

use core::fmt;

/// The longest piece of input an error message quotes whole, in characters.
const LIMIT: usize = 60;

/// A token of the input as an error message shows it: `Debug`-quoted (so control
/// characters and a stray BOM are visible), and cut after [`LIMIT`] characters with the
/// full length noted — a 1 MB garbage line never becomes a 1 MB message.
pub(crate) struct Shown<'a>(pub &'a str);

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(LIMIT) {
            None => fmt::Debug::fmt(self.0, f),
            Some((cut, _)) => {
                fmt::Debug::fmt(&self.0[..cut], f)?;
                write!(f, "… ({} bytes)", self.0.len())
            }
        }
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(LIMIT) {
            None => f.write_str(self.0),
            Some((cut, _)) => write!(f, "{}… ({} bytes)", &self.0[..cut], self.0.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Shown;

    #[test]
    fn long_tokens_are_cut() {
        assert_eq!(format!("{:?}", Shown("ab")), "\"ab\"");
        let long = "é".repeat(100);
        let s = format!("{:?}", Shown(&long));
        assert!(s.starts_with(&format!("\"{}\"…", "é".repeat(60))), "{s}");
        assert!(s.ends_with("(200 bytes)"));
        assert_eq!(
            format!("{}", Shown(&"x".repeat(61))).len(),
            60 + "… (61 bytes)".len()
        );
    }
}
