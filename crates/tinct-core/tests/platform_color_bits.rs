//! `[platform] color_bits` (issue 16): a task set can override the
//! machine's page-colour rule (sliced caches: kim2013's i7-2600 has 32
//! colours on bits 12-16). Accepted values read back equal through
//! `to_toml`; every rejection names the file, line and field.

use tinct_core::format::{InputError, Syntax, parse, to_toml};

fn set(color_bits: &str) -> String {
    format!(
        "[platform]\ncores = 1\npartitions = 8\nmemory = \"256MiB\"\nrefill = \"10us\"\n\
         color_bits = {color_bits}\n\n[[task]]\nname = \"a\"\nperiod = \"10ms\"\n\
         memory = \"1MiB\"\nwcet = \"1ms\"\n"
    )
}

fn error(color_bits: &str) -> InputError {
    parse(&set(color_bits), "set.toml", Syntax::Toml).expect_err("must be rejected")
}

#[test]
fn colour_bits_are_kept_and_written_back() {
    let parsed = parse(&set("[12, 13, 14, 15, 16]"), "set.toml", Syntax::Toml).unwrap();
    assert_eq!(parsed.platform.color_bits, Some(vec![12, 13, 14, 15, 16]));
    let text = to_toml(&parsed, &[]);
    assert!(text.contains("color_bits = [12, 13, 14, 15, 16]"), "{text}");
    assert_eq!(parse(&text, "again.toml", Syntax::Toml).unwrap(), parsed);
    let without = parse(
        &set("[12]").replace("color_bits = [12]\n", ""),
        "set.toml",
        Syntax::Toml,
    )
    .unwrap();
    assert_eq!(without.platform.color_bits, None);
    assert!(!to_toml(&without, &[]).contains("color_bits"));
    let json = r#"{"platform": {"cores": 1, "partitions": 2, "memory": "1MiB",
        "refill": "1us", "color_bits": [12, 13]},
        "task": [{"name": "a", "period": "10ms", "memory": "1KiB", "wcet": "1ms"}]}"#;
    let parsed = parse(json, "set.json", Syntax::Json).unwrap();
    assert_eq!(parsed.platform.color_bits, Some(vec![12, 13]));
}

#[test]
fn bad_colour_bits_name_the_line_and_what_was_found() {
    for (bits, found) in [
        ("[12, 14, 13]", "13 after 14"),
        ("[12, 12, 13]", "12 after 12"),
        ("[5, 12, 13]", "5"),
        ("[12, 64, 65]", "64"),
        ("[\"12\", 13, 14]", "\"12\""),
        ("[]", "0 bits"),
        ("[12, 13]", "2 bits (4 colours)"),
    ] {
        let err = error(bits);
        let message = err.to_string();
        assert!(
            message.starts_with("set.toml:6: ") && message.contains("platform field `color_bits`"),
            "{bits}: {message}"
        );
        assert!(
            message.contains(found) && message.contains("expected"),
            "{bits}: {message}"
        );
    }
    let err = error("[12, 13]");
    assert!(
        err.expected.contains("8 partitions need at least 3 bits"),
        "{err}"
    );
}

/// `[platform] dram_map = "FILE"` reads the file `tinct bench dram-map`
/// writes, relative to the task set; a bad file is named with its line,
/// inside an error naming the task set's line.
#[test]
fn a_task_set_reads_its_dram_mapping_file() {
    let dir = std::env::temp_dir().join(format!("tinct-core-dram-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let map = tinct_core::dram_map::DramMap {
        bank_functions: vec![0x44000, 0x88000],
        controller_functions: Vec::new(),
        confidence: vec![0.99, 0.97],
        physical: tinct_core::dram_map::AddressKind::Host,
        machine: "test".into(),
    };
    std::fs::write(dir.join("dram-map.toml"), map.to_toml(&[])).unwrap();
    let set = set("[12, 13, 14]").replace(
        "color_bits = [12, 13, 14]\n",
        "color_bits = [12, 13, 14]\ndram_map = \"dram-map.toml\"\n",
    );
    let path = dir.join("set.toml");
    std::fs::write(&path, &set).unwrap();
    let loaded = tinct_core::format::load(&path).unwrap();
    let dram = loaded.platform.dram_map.as_ref().unwrap();
    assert_eq!((dram.path.as_str(), &dram.map), ("dram-map.toml", &map));
    let again = dir.join("again.toml");
    std::fs::write(&again, to_toml(&loaded, &[])).unwrap();
    assert_eq!(tinct_core::format::load(&again).unwrap(), loaded);
    std::fs::write(
        dir.join("dram-map.toml"),
        "bank_functions = [\"4\"]\nphysical = \"host\"\n",
    )
    .unwrap();
    let err = tinct_core::format::load(&path).unwrap_err();
    assert_eq!(err.line, Some(7), "{err}");
    assert!(
        err.field.contains("dram_map") && err.found.contains("dram-map.toml:1"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
