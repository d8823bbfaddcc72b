//! Progress output on stderr (hidden automatically when stderr is not a terminal).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A spinner with a message, ticking on its own.
pub fn spinner(msg: impl Into<String>) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").unwrap());
    pb.set_message(msg.into());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// A bar over `len` steps.
pub fn bar(len: u64, msg: impl Into<String>) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} [{elapsed}<{eta}]")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_message(msg.into());
    pb
}
