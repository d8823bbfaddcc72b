//! `include/lpmkit.h` is what cbindgen generates from the crate today: a changed entry
//! point without a regenerated header fails here. `LPMKIT_BLESS=1` rewrites the header.

#[test]
fn the_committed_header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).unwrap();
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let path = format!("{dir}/include/lpmkit.h");
    if std::env::var_os("LPMKIT_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{path} is not what cbindgen generates from src/lib.rs; regenerate it with \
         `LPMKIT_BLESS=1 cargo test --release -p lpmkit-capi --test header`"
    );
}
