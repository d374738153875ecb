//! `[[resource]]` tables and each task's `critical_sections`.

use super::{Field, Reporter, task_field};
use crate::format::InputError;
use crate::format::locate::Seg;
use crate::format::raw::{RawResource, RawTask};
use crate::limits::Limit;
use crate::model::{Body, CriticalSection, Protocol, Resource, WcetTable, Work};
use crate::units::Nanos;
use std::collections::HashMap;

/// The resources, with names unique and protocols known.
pub(super) fn validate_resources(
    raw: &[RawResource],
    reporter: &Reporter<'_>,
) -> Result<Vec<Resource>, InputError> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut resources = Vec::with_capacity(raw.len());
    for (r, resource) in raw.iter().enumerate() {
        let at = |key: &str| {
            vec![
                Seg::Key("resource".into()),
                Seg::Index(r),
                Seg::Key(key.into()),
            ]
        };
        let field = format!("resource #{} field `name`", r + 1);
        super::check_printable_name(&resource.name, &at("name"), field.clone(), reporter)?;
        if resource.name.trim().is_empty() {
            return Err(reporter.error(
                &at("name"),
                field,
                "a non-empty resource name",
                "an empty string",
            ));
        }
        if let Some(first) = names.insert(resource.name.as_str(), r) {
            return Err(reporter.error(
                &at("name"),
                field,
                format!(
                    "a unique resource name (resource #{} already has it)",
                    first + 1
                ),
                format!("a second resource named '{}'", resource.name),
            ));
        }
        let protocol = Protocol::ALL
            .iter()
            .find(|(name, _)| *name == resource.protocol)
            .map(|&(_, p)| p)
            .ok_or_else(|| {
                reporter.error(
                    &at("protocol"),
                    format!("resource '{}' field `protocol`", resource.name),
                    "one of pcp (immediate priority ceiling), pip (priority inheritance), none (a plain mutex)",
                    format!("\"{}\"", resource.protocol),
                )
            })?;
        resources.push(Resource {
            name: resource.name.clone(),
            protocol,
        });
    }
    Ok(resources)
}

/// A task's critical sections: each names a resource of the set, has a
/// length above zero, and together they fit in the task's smallest C^p.
pub(super) fn validate_sections(
    raw: &RawTask,
    i: usize,
    resources: &[Resource],
    wcet: &WcetTable,
    reporter: &Reporter<'_>,
) -> Result<Vec<CriticalSection>, InputError> {
    let Some(sections) = &raw.critical_sections else {
        return Ok(Vec::new());
    };
    let at = |k: usize, key: &str| {
        vec![
            Seg::Key("task".into()),
            Seg::Index(i),
            Seg::Key("critical_sections".into()),
            Seg::Index(k),
            Seg::Key(key.into()),
        ]
    };
    let mut out = Vec::with_capacity(sections.len());
    let mut total: u128 = 0;
    for (k, section) in sections.iter().enumerate() {
        let name = |key: &str| task_field(&raw.name, &format!("critical_sections[{k}].{key}"));
        let resource = resources
            .iter()
            .position(|r| r.name == section.resource)
            .ok_or_else(|| {
                let known: Vec<&str> = resources.iter().map(|r| r.name.as_str()).collect();
                reporter.error(
                    &at(k, "resource"),
                    name("resource"),
                    if known.is_empty() {
                        "a resource declared in a [[resource]] table (there is none)".to_string()
                    } else {
                        format!("one of the declared resources: {}", known.join(", "))
                    },
                    format!("\"{}\"", section.resource),
                )
            })?;
        let length_field = Field {
            reporter,
            at: at(k, "length"),
            name: name("length"),
        };
        let length = length_field.duration(&section.length)?;
        if length == Nanos::ZERO {
            return Err(length_field.fail("a critical section longer than zero", "0"));
        }
        total += u128::from(length.0);
        out.push(CriticalSection { resource, length });
    }
    // C^p never increases with p, so the last listed value is the smallest.
    let smallest = wcet.listed().iter().next_back().map(|(&p, &c)| (p, c));
    if let Some((p, c)) = smallest
        && total > u128::from(c.0)
    {
        return Err(reporter.error(
            &[
                Seg::Key("task".into()),
                Seg::Index(i),
                Seg::Key("critical_sections".into()),
            ],
            task_field(&raw.name, "critical_sections"),
            format!("critical sections that fit in the job: Σ lengths ≤ C^p at every p, here C^{p} = {c}"),
            format!("Σ lengths = {} ns", total),
        ));
    }
    Ok(out)
}

/// A task's critical sections fit in its body's `target` (the work a job of
/// `tinct run` does, of which the sections are part), as they fit in C:
/// checked here, located, so that analyze and plan refuse what run would.
pub(super) fn validate_sections_in_body(
    raw: &RawTask,
    i: usize,
    sections: &[CriticalSection],
    body: Option<&Body>,
    reporter: &Reporter<'_>,
) -> Result<(), InputError> {
    let Some(Work::Target(target)) = body.and_then(|b| b.work) else {
        return Ok(());
    };
    let total: u128 = sections.iter().map(|s| u128::from(s.length.0)).sum();
    if total <= u128::from(target.0) {
        return Ok(());
    }
    Err(reporter.error(
        &[
            Seg::Key("task".into()),
            Seg::Index(i),
            Seg::Key("critical_sections".into()),
        ],
        task_field(&raw.name, "critical_sections"),
        Limit::SectionsInBody(target).expected(),
        format!("Σ lengths = {total} ns"),
    ))
}
