//! The keys of issues 12-14 in the task-set file: `[[resource]]`,
//! `critical_sections`, `jitter`, `blocking`, `[platform] overheads` and
//! `cache_domains`, `[[edge]]` and `trigger = "data"`. Each rule's error
//! names the file, the line and the field; a written set re-reads equal in
//! TOML and JSON.

mod common;

use common::{assert_names, error};
use tinct_core::format::{Syntax, parse, to_json, to_toml};
use tinct_core::model::{Protocol, Trigger};
use tinct_core::units::{Bytes, Nanos};

const FULL: &str = r#"[platform]
cores = 2
partitions = 8
memory = "64MiB"
refill = "10us"
overheads = { context_switch = "5us", release_latency = "20us", tick = "1us", tick_period = "4ms" }
cache_domains = [[0], [1]]

[[resource]]
name = "bus"
protocol = "pcp"

[[resource]]
name = "log"
protocol = "pip"

[[task]]
name = "producer"
period = "10ms"
memory = "1MiB"
wcet = "2ms"
core = 0
jitter = "100us"
critical_sections = [{ resource = "bus", length = "200us" }, { resource = "log", length = "50us" }]

[[task]]
name = "consumer"
trigger = "data"
memory = "1MiB"
wcet = "1ms"
core = 1
blocking = "30us"
critical_sections = [{ resource = "bus", length = "300us" }]

[[edge]]
from = "producer"
to = "consumer"
buffer = "4KiB"
"#;

#[test]
fn every_new_key_is_read() {
    let set = parse(FULL, "set.toml", Syntax::Toml).unwrap();
    let o = set.platform.overheads;
    assert_eq!(
        (o.context_switch, o.release_latency, o.tick, o.tick_period),
        (
            Nanos::from_us(5),
            Nanos::from_us(20),
            Nanos::from_us(1),
            Some(Nanos::from_ms(4))
        )
    );
    assert_eq!(set.platform.cache_domains, Some(vec![vec![0], vec![1]]));
    assert_eq!(set.resources.len(), 2);
    assert_eq!(
        (set.resources[1].name.as_str(), set.resources[1].protocol),
        ("log", Protocol::Pip)
    );
    let producer = &set.tasks[0];
    assert_eq!(producer.jitter, Nanos::from_us(100));
    assert_eq!(producer.blocking, None);
    assert_eq!(producer.critical_sections.len(), 2);
    assert_eq!(producer.critical_sections[1].resource, 1);
    assert_eq!(producer.critical_sections[1].length, Nanos::from_us(50));
    let consumer = &set.tasks[1];
    assert_eq!(consumer.trigger, Trigger::Data);
    // Its period and (default) deadline are the producer's.
    assert_eq!(
        (consumer.period, consumer.deadline),
        (Nanos::from_ms(10), Nanos::from_ms(10))
    );
    assert_eq!(consumer.blocking, Some(Nanos::from_us(30)));
    assert_eq!(set.edges.len(), 1);
    assert_eq!(
        (set.edges[0].from, set.edges[0].to, set.edges[0].buffer),
        (0, 1, Bytes::from_kib(4))
    );
}

#[test]
fn defaults_are_none_zero_and_one_domain_per_core() {
    let text = r#"[platform]
cores = 3
partitions = 4
memory = "4MiB"
refill = "1us"

[[task]]
name = "a"
period = "10ms"
memory = "1MiB"
wcet = "1ms"
"#;
    let set = parse(text, "set.toml", Syntax::Toml).unwrap();
    assert!(set.platform.overheads.is_none());
    assert_eq!(
        set.platform.cache_domains(),
        vec![vec![0], vec![1], vec![2]]
    );
    assert_eq!(set.platform.domain_of_cores(), vec![0, 1, 2]);
    let task = &set.tasks[0];
    assert_eq!(
        (
            task.jitter,
            task.blocking,
            task.trigger,
            task.critical_sections.len()
        ),
        (Nanos::ZERO, None, Trigger::Timer, 0)
    );
    assert!(set.resources.is_empty() && set.edges.is_empty());
}

#[test]
fn written_sets_reread_equal() {
    let set = parse(FULL, "set.toml", Syntax::Toml).unwrap();
    let toml = to_toml(&set, &["a header".to_string()]);
    let again = parse(&toml, "again.toml", Syntax::Toml).unwrap();
    assert_eq!(again.tasks, set.tasks);
    assert_eq!(again.platform, set.platform);
    assert_eq!(
        (again.resources.clone(), again.edges.clone()),
        (set.resources.clone(), set.edges.clone())
    );
    // Sections are written inline, one line per task, as in docs/FORMAT.md.
    assert!(
        toml.contains(r#"critical_sections = [{ resource = "bus", length = "200us" }"#),
        "{toml}"
    );
    assert!(toml.contains("overheads = {"), "{toml}");
    let json = to_json(&set);
    let from_json = parse(&json, "again.json", Syntax::Json).unwrap();
    assert_eq!(from_json.tasks, set.tasks);
    assert_eq!(from_json.platform, set.platform);
    assert_eq!(from_json.edges, set.edges);
}

fn replace(from: &str, to: &str) -> String {
    assert!(FULL.contains(from), "{from}");
    FULL.replacen(from, to, 1)
}

#[test]
fn resources_are_checked() {
    let err = error(&replace(
        "protocol = \"pcp\"",
        "protocol = \"priority-ceiling\"",
    ));
    assert_names(
        &err,
        11,
        "resource 'bus' field `protocol`",
        "priority-ceiling",
    );
    let err = error(&replace("name = \"log\"", "name = \"bus\""));
    assert_names(
        &err,
        14,
        "resource #2 field `name`",
        "a second resource named 'bus'",
    );
    let err = error(&replace(
        "{ resource = \"log\", length = \"50us\" }",
        "{ resource = \"lgo\", length = \"50us\" }",
    ));
    assert_names(
        &err,
        24,
        "task 'producer' field `critical_sections[1].resource`",
        "\"lgo\"",
    );
    assert!(err.to_string().contains("bus, log"), "{err}");
    let err = error(&replace("length = \"50us\"", "length = \"0us\""));
    assert_names(&err, 24, "critical_sections[1].length", "0");
    let err = error(&replace("length = \"50us\"", "length = 50"));
    assert_names(&err, 24, "critical_sections[1].length", "50");
}

#[test]
fn sections_must_fit_in_the_smallest_wcet() {
    // 200us + 50us of sections in a job of 0.2ms.
    let err = error(&replace(
        "wcet = \"2ms\"",
        "wcet = { 1 = \"2ms\", 4 = \"0.2ms\" }",
    ));
    assert_names(
        &err,
        24,
        "task 'producer' field `critical_sections`",
        "Σ lengths = 250000 ns",
    );
    assert!(err.to_string().contains("C^4 = 200us"), "{err}");
    // Exactly C is allowed.
    let fits = replace("wcet = \"2ms\"", "wcet = { 1 = \"2ms\", 4 = \"0.25ms\" }");
    assert!(parse(&fits, "set.toml", Syntax::Toml).is_ok());
}

/// The sections are part of the job `tinct run` executes: they fit in the
/// body's `target` too, refused where the file is read (so analyze and
/// plan refuse what run would), at the `critical_sections` key's line.
#[test]
fn sections_must_fit_in_the_bodys_target() {
    let with_body = |target: &str| {
        replace(
            "jitter = \"100us\"",
            &format!(
                "jitter = \"100us\"\nbody = {{ kernel = \"compute\", target = \"{target}\" }}"
            ),
        )
    };
    let err = error(&with_body("0.2ms"));
    assert_names(
        &err,
        25,
        "task 'producer' field `critical_sections`",
        "Σ lengths = 250000 ns",
    );
    assert!(err.to_string().contains("body.target = 200us"), "{err}");
    assert!(parse(&with_body("0.25ms"), "set.toml", Syntax::Toml).is_ok());
}

#[test]
fn jitter_blocking_and_overheads_are_durations() {
    let err = error(&replace("jitter = \"100us\"", "jitter = 100"));
    assert_names(&err, 23, "task 'producer' field `jitter`", "100");
    let err = error(&replace("blocking = \"30us\"", "blocking = \"30\""));
    assert_names(&err, 32, "task 'consumer' field `blocking`", "30");
    let err = error(&replace("tick = \"1us\"", "tick = \"1 tick\""));
    assert_names(&err, 6, "platform field `overheads.tick`", "1 tick");
    let err = error(&replace("tick_period = \"4ms\"", "tick_period = \"0ms\""));
    assert_names(&err, 6, "platform field `overheads.tick_period`", "0");
    let err = error(&replace("tick = \"1us\"", "tick = \"4ms\""));
    assert_names(&err, 6, "platform field `overheads.tick`", "4ms");
    let err = error(&replace(
        "context_switch = \"5us\"",
        "context_swtich = \"5us\"",
    ));
    assert!(
        err.to_string().contains("unknown key `context_swtich`"),
        "{err}"
    );
}

#[test]
fn cache_domains_partition_the_cores() {
    let err = error(&replace("[[0], [1]]", "[[0], [0]]"));
    assert_names(&err, 7, "platform field `cache_domains`", "core 0 twice");
    let err = error(&replace("[[0], [1]]", "[[0]]"));
    assert_names(&err, 7, "platform field `cache_domains`", "core 1 in none");
    let err = error(&replace("[[0], [1]]", "[[0, 1, 2]]"));
    assert_names(&err, 7, "platform field `cache_domains`", "core 2");
    let err = error(&replace("[[0], [1]]", "[[0, 1], []]"));
    assert_names(
        &err,
        7,
        "platform field `cache_domains`",
        "domain #2 is empty",
    );
}

#[test]
fn the_graph_is_checked() {
    let err = error(&replace("to = \"consumer\"", "to = \"consumr\""));
    assert_names(&err, 37, "edge #1 field `to`", "\"consumr\"");
    let err = error(&replace("to = \"consumer\"", "to = \"producer\""));
    assert_names(&err, 37, "edge #1 field `to`", "itself");
    let err = error(&replace("buffer = \"4KiB\"", "buffer = \"4KB\""));
    assert_names(&err, 38, "edge #1 field `buffer`", "4KB");
    let err = error(&replace("trigger = \"data\"", "trigger = \"signal\""));
    assert_names(&err, 28, "task 'consumer' field `trigger`", "signal");
    // A timer task needs its period.
    let err = error(&replace("period = \"10ms\"\n", ""));
    assert_names(
        &err,
        17,
        "task 'producer' field `period`",
        "no `period` key",
    );
    // A data task given another period than its producer's.
    let err = error(&replace(
        "trigger = \"data\"",
        "trigger = \"data\"\nperiod = \"5ms\"",
    ));
    assert_names(&err, 29, "task 'consumer' field `period`", "5ms");
    assert!(err.to_string().contains("10ms"), "{err}");
    // Its own period, equal to the producer's, is accepted.
    let same = replace(
        "trigger = \"data\"",
        "trigger = \"data\"\nperiod = \"10ms\"",
    );
    assert!(parse(&same, "set.toml", Syntax::Toml).is_ok());
    // A data task nobody feeds.
    let err = error(&replace(
        "[[edge]]\nfrom = \"producer\"\nto = \"consumer\"\nbuffer = \"4KiB\"\n",
        "",
    ));
    assert_names(&err, 28, "task 'consumer' field `trigger`", "no producer");
    // The same edge twice.
    let err = error(&format!(
        "{FULL}\n[[edge]]\nfrom = \"producer\"\nto = \"consumer\"\nbuffer = \"1KiB\"\n"
    ));
    assert_names(&err, 42, "edge #2 field `to`", "again");
}

#[test]
fn a_cycle_is_refused_and_named() {
    let cycle = format!(
        "{FULL}\n[[task]]\nname = \"third\"\ntrigger = \"data\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\ncore = 0\n\
         \n[[edge]]\nfrom = \"consumer\"\nto = \"third\"\nbuffer = \"1KiB\"\n\
         \n[[edge]]\nfrom = \"third\"\nto = \"consumer\"\nbuffer = \"1KiB\"\n"
    );
    let err = error(&cycle);
    let message = err.to_string();
    assert!(message.contains("acyclic"), "{message}");
    assert!(
        message.contains("consumer → third → consumer")
            || message.contains("third → consumer → third"),
        "{message}"
    );
}

#[test]
fn producers_of_one_consumer_share_a_period() {
    let text = replace(
        "[[task]]\nname = \"consumer\"",
        "[[task]]\nname = \"other\"\nperiod = \"20ms\"\nmemory = \"1MiB\"\nwcet = \"1ms\"\ncore = 1\n\n[[task]]\nname = \"consumer\"",
    ) + "\n[[edge]]\nfrom = \"other\"\nto = \"consumer\"\nbuffer = \"1KiB\"\n";
    let err = error(&text);
    let message = err.to_string();
    assert!(
        message.contains("task 'consumer' field `trigger`"),
        "{message}"
    );
    assert!(
        message.contains("'producer' every 10ms and 'other' every 20ms"),
        "{message}"
    );
}

#[test]
fn json_uses_the_same_schema() {
    let json = r#"{
  "platform": {"cores": 1, "partitions": 4, "memory": "4MiB", "refill": "1us",
               "overheads": {"context_switch": "2us"}},
  "resources": [{"name": "r", "protocol": "none"}],
  "tasks": [
    {"name": "a", "period": "10ms", "memory": "1MiB", "wcet": "1ms",
     "critical_sections": [{"resource": "r", "length": "10us"}]},
    {"name": "b", "trigger": "data", "memory": "1MiB", "wcet": "1ms", "jitter": "5us"}
  ],
  "edges": [{"from": "a", "to": "b", "buffer": 4096}]
}"#;
    let set = parse(json, "set.json", Syntax::Json).unwrap();
    assert_eq!(set.resources[0].protocol, Protocol::None);
    assert_eq!(set.platform.overheads.context_switch, Nanos::from_us(2));
    assert_eq!(set.tasks[1].period, Nanos::from_ms(10));
    assert_eq!(set.tasks[1].jitter, Nanos::from_us(5));
    assert_eq!(set.edges[0].buffer, Bytes(4096));
    let err = parse(
        &json.replace("\"buffer\": 4096", "\"buffer\": -1"),
        "set.json",
        Syntax::Json,
    )
    .unwrap_err();
    assert!(err.to_string().contains("edge #1 field `buffer`"), "{err}");
}

/// Issue 27: a header line carries text from input (an input path); a
/// line break or another control character in it is written escaped, so
/// it can neither add a task to the file nor make it unreadable.
#[test]
fn a_header_cannot_inject_keys_into_the_file() {
    let set = parse(FULL, "set.toml", Syntax::Toml).unwrap();
    let hostile = "x\n[[task]]\nname = \"ghost\"\r\u{7}#.toml".to_string();
    let text = to_toml(
        &set,
        &[format!("Placement written from {hostile}."), hostile],
    );
    let again = parse(&text, "plan.toml", Syntax::Toml).expect(&text);
    assert_eq!(again.tasks.len(), set.tasks.len(), "{text}");
    assert!(!again.tasks.iter().any(|t| t.name == "ghost"), "{text}");
    assert!(
        text.starts_with(
            "# Placement written from x\\n[[task]]\\nname = \"ghost\"\\r\\u{7}#.toml.\n"
        ),
        "{text}"
    );
}
