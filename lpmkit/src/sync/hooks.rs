//! Test hooks (feature `test-hooks`, and this crate's own tests): a test sees every state
//! of a table a reader can meet while a patch runs.
//!
//! Every in-place writer makes its work visible through `Arena::store_release` (the
//! switch-word store of `schemes::common`), so running a check after each such store, on
//! the writer's own thread, looks the table up in each state a concurrent reader could
//! meet — deterministically, where the threaded tests of `tests/concurrency.rs` meet
//! those states only by chance.

use std::cell::RefCell;

thread_local! {
    static AFTER_PUBLISH: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
}

/// Runs `f` with `hook` called after every switch-word store this thread makes, and
/// returns what `f` returns. A store made by the hook itself does not call it again.
pub fn with_after_publish<R>(hook: impl FnMut() + 'static, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            AFTER_PUBLISH.with(|h| *h.borrow_mut() = None);
        }
    }
    AFTER_PUBLISH.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
    let _reset = Reset;
    f()
}

/// Calls the hook, if one is set (from `Arena::store_release`).
pub(crate) fn after_publish() {
    AFTER_PUBLISH.with(|h| {
        if let Ok(mut hook) = h.try_borrow_mut() {
            if let Some(f) = hook.as_mut() {
                f();
            }
        }
    });
}
