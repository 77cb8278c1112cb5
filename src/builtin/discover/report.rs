//! The code map `discover` returns, in the reference's shape with its defects fixed: a title, a summary line,
//! one line of counts (files walked, read, relevant), a tree of the reported files (★ high, ◆ medium), then one
//! section per folder (named by its path relative to the root, so two `src` folders stay apart) listing each
//! file with its role, line count, matching definitions with their lines, imports and best lines. Every path
//! is relative to the searched directory. At most [`MAX_REPORT_FILES`] files; the rest are named by folder.
//!
//! Owns the report text. Must not rank.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::engine::{Findings, Hit, Relevance};

/// Most files reported.
pub const MAX_REPORT_FILES: usize = 20;
/// Most definitions listed per file.
const MAX_SYMBOLS_SHOWN: usize = 8;

fn mark(relevance: Relevance) -> &'static str {
    match relevance {
        Relevance::High => "★",
        Relevance::Medium => "◆",
    }
}

fn folder(rel: &Path) -> String {
    match rel.parent().map(|p| p.to_string_lossy().into_owned()) {
        Some(p) if !p.is_empty() => p,
        _ => ".".into(),
    }
}

/// A folder's reported files, best first.
struct Cluster<'a> {
    name: String,
    files: Vec<&'a Hit>,
    /// All its relevant files, reported or not.
    total: usize,
    high: usize,
}

/// Group the best [`MAX_REPORT_FILES`] hits (`hits` is best first) by folder; folders with more HIGH files
/// first, then by their best file.
fn clusters(hits: &[Hit]) -> (Vec<Cluster<'_>>, Vec<(String, usize)>) {
    let mut by_folder: BTreeMap<String, Cluster> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for (i, hit) in hits.iter().enumerate() {
        let name = folder(&hit.rel);
        let cluster = by_folder.entry(name.clone()).or_insert_with(|| {
            order.push(name.clone());
            Cluster { name, files: Vec::new(), total: 0, high: 0 }
        });
        cluster.total += 1;
        if i < MAX_REPORT_FILES {
            cluster.files.push(hit);
            if hit.relevance == Relevance::High {
                cluster.high += 1;
            }
        }
    }
    let mut shown = Vec::new();
    let mut overflow = Vec::new();
    for name in order {
        let Some(cluster) = by_folder.remove(&name) else { continue };
        let left = cluster.total - cluster.files.len();
        if left > 0 {
            overflow.push((cluster.name.clone(), left));
        }
        if !cluster.files.is_empty() {
            shown.push(cluster);
        }
    }
    // Stable: ties keep the order of the best file.
    shown.sort_by_key(|c| std::cmp::Reverse(c.high));
    (shown, overflow)
}

/// The tree of the reported files, folders ending in `/`, two spaces per level.
fn tree(files: &[&Hit]) -> String {
    let mut sorted: Vec<&&Hit> = files.iter().collect();
    sorted.sort_by(|a, b| a.rel.cmp(&b.rel));
    let mut out = String::new();
    let mut open: Vec<String> = Vec::new();
    for hit in sorted {
        let parts: Vec<String> = hit.rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        let (name, dirs) = parts.split_last().map(|(n, d)| (n.clone(), d.to_vec())).unwrap_or_default();
        let same = open.iter().zip(&dirs).take_while(|(a, b)| a == b).count();
        open.truncate(same);
        for dir in &dirs[same..] {
            let _ = writeln!(out, "{}{dir}/", "  ".repeat(open.len()));
            open.push(dir.clone());
        }
        let _ = writeln!(out, "{}{} {name}", "  ".repeat(open.len()), mark(hit.relevance));
    }
    out
}

fn symbol_list(symbols: &[super::symbols::Symbol]) -> String {
    let mut shown: Vec<String> = symbols
        .iter()
        .take(MAX_SYMBOLS_SHOWN)
        .map(|s| format!("{} {} (L{})", s.kind, s.name, s.line))
        .collect();
    if symbols.len() > MAX_SYMBOLS_SHOWN {
        shown.push(format!("+{} more", symbols.len() - MAX_SYMBOLS_SHOWN));
    }
    shown.join(", ")
}

fn entry(out: &mut String, hit: &Hit) {
    let stem = hit.rel.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let parent = hit.rel.parent().and_then(Path::file_name).map(|p| format!("{}/", p.to_string_lossy()));
    let named = if hit.matching.is_empty() { &hit.first } else { &hit.matching };
    let names: Vec<&str> = named.iter().take(2).map(|s| s.name.as_str()).collect();
    let role = if names.is_empty() { String::new() } else { format!(" ({})", names.join(", ")) };
    let lines = if hit.complete { format!("{}L", hit.lines) } else { format!("{}L+", hit.lines) };
    let _ = writeln!(
        out,
        "  {} `{}` — {}{stem}{role} ({lines})",
        mark(hit.relevance),
        hit.rel.display(),
        parent.unwrap_or_default()
    );
    if !hit.matching.is_empty() {
        let _ = writeln!(out, "    defines: {}", symbol_list(&hit.matching));
    }
    if !hit.imports.is_empty() {
        let _ = writeln!(out, "    imports: {}", hit.imports.join(", "));
    }
    if !hit.context.is_empty() {
        let lines: Vec<String> = hit.context.iter().map(|(n, l)| format!("L{n}: {l}")).collect();
        let _ = writeln!(out, "    context: {}", lines.join(" | "));
    }
}

/// The report for `query` (searched under `shown_root`, as the model named it).
pub fn render(query: &str, shown_root: &str, findings: &Findings) -> String {
    let (clusters, overflow) = clusters(&findings.hits);
    let reported: Vec<&Hit> = clusters.iter().flat_map(|c| c.files.iter().copied()).collect();
    let high = findings.hits.iter().filter(|h| h.relevance == Relevance::High).count();
    let mut out = format!("# Discovery: {query}\n");
    if findings.hits.is_empty() {
        let _ = writeln!(out, "No relevant files found under `{shown_root}`.");
    } else {
        let key: Vec<&str> = clusters.iter().take(3).map(|c| c.name.as_str()).collect();
        let areas =
            clusters.len() + overflow.iter().filter(|(n, _)| !clusters.iter().any(|c| &c.name == n)).count();
        let _ = writeln!(
            out,
            "Found {} relevant files ({high} high, {} medium) in {areas} area{}. Key: {}.",
            findings.hits.len(),
            findings.hits.len() - high,
            if areas == 1 { "" } else { "s" },
            key.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "({} files walked, {} scanned, {} read → {} relevant)",
        findings.walked,
        findings.prescanned,
        findings.read,
        findings.hits.len()
    );
    if findings.partial {
        out.push_str(
            "(Stopped at the time limit: the results are partial. Narrow the query or the directory.)\n",
        );
    }
    if reported.is_empty() {
        return out;
    }
    let _ = write!(out, "\n```\n{}```\n", tree(&reported));
    for cluster in &clusters {
        let _ = write!(out, "\n## {}\n", cluster.name);
        let shown = if cluster.files.len() < cluster.total {
            format!("{} of {} files shown", cluster.files.len(), cluster.total)
        } else {
            format!("{} file{}", cluster.total, if cluster.total == 1 { "" } else { "s" })
        };
        let _ = writeln!(out, "{shown} ({} high relevance)", cluster.high);
        for hit in &cluster.files {
            entry(&mut out, hit);
        }
    }
    if !overflow.is_empty() {
        let more: usize = overflow.iter().map(|(_, n)| n).sum();
        let names: Vec<String> = overflow.iter().map(|(name, n)| format!("{name} (+{n})")).collect();
        let _ = write!(out, "\n(+{more} more in: {})\n", names.join(", "));
    }
    out
}

/// The reported files' paths relative to the root, for the tool call's locations.
pub fn reported(findings: &Findings) -> Vec<PathBuf> {
    findings.hits.iter().take(MAX_REPORT_FILES).map(|h| h.rel.clone()).collect()
}
