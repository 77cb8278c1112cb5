//! The discover pipeline over the files a walk found: a pre-scan of paths and of file contents (the first
//! [`Limits::prescan_cap`] bytes of each, files in priority order until [`Limits::budget`] bytes are read), a
//! first ranking on path and content, then at most [`Limits::max_candidates`] candidates read (up to
//! [`Limits::read_cap`] bytes) for their symbols, lines and imports, and a final BM25F ranking over path,
//! symbol and content fields with HIGH/MEDIUM relevance.
//!
//! Files are matched by their path relative to the root, never the absolute path (a word in the root's own
//! name must not match everything). Binary files (a NUL in the first 8 KB) count by path only. A fired
//! `deadline` stops the work where it is and the results are what was ranked so far.
//!
//! Owns ranking. Reads files only through `workspace::regular` (regular files, capped reads); must not walk.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

use super::matcher::Matcher;
use super::symbols::{self, Symbol};
use super::terms::{DOC_EXTENSIONS, Terms};
use crate::workspace::regular;
use crate::workspace::walk::Found;

/// The bounds of one discovery.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes read by the content pre-scan, all files together.
    pub budget: u64,
    /// Bytes of one file the pre-scan reads.
    pub prescan_cap: u64,
    /// Bytes of one candidate read for its symbols and lines.
    pub read_cap: u64,
    /// Candidates read in full (up to `read_cap`).
    pub max_candidates: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { budget: 24 << 20, prescan_cap: 32 << 10, read_cap: 256 << 10, max_candidates: 150 }
    }
}

/// When discovery must stop: the token stops the walk and the reading threads, the flag stops a parse midway.
#[derive(Debug, Default)]
pub struct Deadline {
    pub token: CancellationToken,
    pub flag: AtomicUsize,
}

impl Deadline {
    pub fn fire(&self) {
        self.flag.store(1, Ordering::SeqCst);
        self.token.cancel();
    }

    pub fn fired(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// HIGH or MEDIUM (less relevant files are not reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relevance {
    Medium,
    High,
}

/// A relevant file.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Relative to the root.
    pub rel: PathBuf,
    pub relevance: Relevance,
    pub score: f64,
    /// Lines in what was read; `complete` says whether that was the whole file.
    pub lines: usize,
    pub complete: bool,
    /// Definitions whose names match the query, in source order.
    pub matching: Vec<Symbol>,
    /// The file's first definitions (for its role when none match).
    pub first: Vec<Symbol>,
    pub imports: Vec<String>,
    /// The best lines: (1-based line, text).
    pub context: Vec<(u32, String)>,
}

/// What a discovery found and how much it looked at.
#[derive(Debug, Default)]
pub struct Findings {
    pub hits: Vec<Hit>,
    /// Files the walk gave (after ignore rules and the extension filter).
    pub walked: usize,
    /// Files whose contents the pre-scan read.
    pub prescanned: usize,
    /// Candidates read for symbols.
    pub read: usize,
    /// The deadline fired before the end.
    pub partial: bool,
}

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Field weights: content, path, symbol names (the reference's filename weight 2; symbols, which name what a
/// file defines, 3).
const W_CONTENT: f64 = 1.0;
const W_PATH: f64 = 2.0;
const W_SYMBOL: f64 = 3.0;
/// What one exact identifier adds (the reference's weight 3, on the BM25 scale).
const EXACT_BONUS: f64 = 6.0;
/// Bytes looked at for a NUL to call a file binary.
const SNIFF: usize = 8 * 1024;
/// Context lines shown per file, and their width.
const MAX_CONTEXT: usize = 3;
const MAX_CONTEXT_CHARS: usize = 120;

fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(SNIFF)].contains(&0)
}

fn extension(path: &Path) -> String {
    path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase()
}

/// One walked file during ranking.
struct File {
    rel: PathBuf,
    path: PathBuf,
    len: u64,
    path_counts: Vec<u32>,
    path_len: f64,
    content: Option<Vec<u32>>,
    content_len: f64,
    exact: Vec<bool>,
}

/// Per-term document frequencies and field averages over the pre-scanned files.
struct Stats {
    idf: Vec<f64>,
    avg_path: f64,
    avg_content: f64,
    avg_symbols: f64,
}

/// Run `work` on every item with a few threads; stops taking items once `deadline` fires.
fn parallel<T: Sync, R: Send>(
    items: &[T],
    deadline: &CancellationToken,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<Option<R>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= items.len() || deadline.is_cancelled() {
                        return;
                    }
                    let result = work(&items[i]);
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(result);
                    }
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Path hits by term (only terms meant for paths count) and the path's length in sub-words.
fn path_counts(matcher: &Matcher, terms: &Terms, rel: &Path) -> (Vec<u32>, f64) {
    let text = rel.to_string_lossy();
    let mut counts = matcher.count(text.as_bytes());
    for (count, term) in counts.iter_mut().zip(&terms.terms) {
        if !term.in_paths {
            *count = 0;
        }
    }
    let words = text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).count();
    (counts, words.max(1) as f64)
}

/// The order the pre-scan reads files in: path hits first, then code before documents, shallow first.
fn prescan_order(files: &[File]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_cached_key(|&i| {
        let file = &files[i];
        let path_hit = file.path_counts.iter().any(|&c| c > 0);
        let doc = DOC_EXTENSIONS.contains(&extension(&file.rel).as_str());
        (!path_hit, doc, file.rel.components().count(), file.rel.clone())
    });
    order
}

/// Read the pre-scan's share of each file, most promising first, until the byte budget is spent.
fn prescan(files: &mut [File], matcher: &Matcher, limits: &Limits, deadline: &CancellationToken) -> usize {
    let mut chosen = Vec::new();
    let mut spent = 0u64;
    for i in prescan_order(files) {
        let share = files[i].len.min(limits.prescan_cap);
        if spent + share > limits.budget {
            continue;
        }
        spent += share;
        chosen.push(i);
    }
    let paths: Vec<(usize, PathBuf)> = chosen.iter().map(|&i| (i, files[i].path.clone())).collect();
    let scanned = parallel(&paths, deadline, |(_, path)| {
        let read = regular::read(path, limits.prescan_cap).ok()?;
        if is_binary(&read.bytes) {
            return None;
        }
        Some((matcher.count(&read.bytes), matcher.exact(&read.bytes), read.bytes.len()))
    });
    let mut count = 0;
    for ((i, _), result) in paths.iter().zip(scanned) {
        let Some(Some((counts, exact, len))) = result else { continue };
        let file = &mut files[*i];
        file.content = Some(counts);
        file.exact = exact;
        file.content_len = len as f64;
        count += 1;
    }
    count
}

fn stats(files: &[File], terms: &Terms) -> Stats {
    let scanned: Vec<&File> = files.iter().filter(|f| f.content.is_some()).collect();
    let n = scanned.len().max(1) as f64;
    let idf = (0..terms.terms.len())
        .map(|t| {
            let df = scanned
                .iter()
                .filter(|f| f.path_counts[t] > 0 || f.content.as_ref().is_some_and(|c| c[t] > 0))
                .count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let avg = |field: fn(&File) -> f64| scanned.iter().map(|f| field(f)).sum::<f64>() / n;
    Stats {
        idf,
        avg_path: avg(|f| f.path_len).max(1.0),
        avg_content: avg(|f| f.content_len).max(1.0),
        avg_symbols: 8.0,
    }
}

/// One field's contribution to a term's pseudo-frequency.
fn field(weight: f64, tf: u32, len: f64, avg: f64) -> f64 {
    weight * f64::from(tf) / (1.0 - B + B * len / avg)
}

/// The fields of one document, for scoring.
struct Fields<'a> {
    path: (&'a [u32], f64),
    content: (&'a [u32], f64),
    symbols: Option<(&'a [u32], f64)>,
    exact: usize,
}

fn bm25f(terms: &Terms, stats: &Stats, doc: &Fields) -> f64 {
    let mut score = 0.0;
    for (t, term) in terms.terms.iter().enumerate() {
        let mut tf = field(W_PATH, doc.path.0[t], doc.path.1, stats.avg_path)
            + field(W_CONTENT, doc.content.0[t], doc.content.1, stats.avg_content);
        if let Some((symbols, len)) = doc.symbols {
            tf += field(W_SYMBOL, symbols[t], len, stats.avg_symbols);
        }
        if tf > 0.0 {
            score += term.weight * stats.idf[t] * tf * (K1 + 1.0) / (tf + K1);
        }
    }
    score + EXACT_BONUS * doc.exact as f64
}

/// The number of distinct terms present in `counts`; with `weighted`, expansions count by their weight.
fn distinct(terms: &Terms, counts: &[u32], weighted: bool) -> f64 {
    let present = counts.iter().zip(&terms.terms).filter(|(c, _)| **c > 0);
    present.map(|(_, t)| if weighted { t.weight } else { 1.0 }).sum()
}

/// The reference's thresholds on field hits: HIGH with an exact identifier, three content terms, two path terms
/// and one content term, or a matching definition and two content terms. Content hits on a concept's expansions
/// count half (a page that mentions session, token and role is not HIGH for "auth" by that alone).
fn relevance(exact: usize, content: f64, path: f64, symbol: f64) -> Option<Relevance> {
    if exact >= 1 || content >= 3.0 || (path >= 2.0 && content >= 1.0) || (symbol >= 1.0 && content >= 2.0) {
        Some(Relevance::High)
    } else if content >= 2.0 || (path >= 1.0 && content >= 0.5) || symbol >= 1.0 {
        Some(Relevance::Medium)
    } else {
        None
    }
}

/// The lines with the most distinct terms (definitions get a half point more), in line order.
fn context_lines(text: &str, matcher: &Matcher, defined: &[u32]) -> Vec<(u32, String)> {
    let mut scored: Vec<(f64, u32, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.len() < 5 {
            continue;
        }
        let hits = matcher.count(trimmed.as_bytes()).iter().filter(|&&c| c > 0).count()
            + matcher.exact(trimmed.as_bytes()).iter().filter(|&&e| e).count();
        if hits == 0 {
            continue;
        }
        let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let bonus = if defined.contains(&number) { 0.5 } else { 0.0 };
        scored.push((hits as f64 + bonus, number, trimmed));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(MAX_CONTEXT);
    scored.sort_by_key(|s| s.1);
    scored
        .into_iter()
        .map(|(_, n, line)| {
            let cut: String = line.chars().take(MAX_CONTEXT_CHARS).collect();
            (n, if cut.len() < line.len() { format!("{cut}…") } else { cut })
        })
        .collect()
}

/// Read one candidate and rank it with all three fields.
fn evaluate(
    file: &File,
    terms: &Terms,
    matcher: &Matcher,
    stats: &Stats,
    limits: &Limits,
    flag: &AtomicUsize,
) -> Option<Hit> {
    let read = regular::read(&file.path, limits.read_cap).ok()?;
    let binary = is_binary(&read.bytes);
    let text = if binary { String::new() } else { String::from_utf8_lossy(&read.bytes).into_owned() };
    let content = matcher.count(text.as_bytes());
    let exact = matcher.exact(text.as_bytes()).iter().filter(|&&e| e).count();
    let defined = if binary { Vec::new() } else { symbols::definitions(&extension(&file.rel), &text, flag) };
    let mut symbol_counts = vec![0u32; matcher.len];
    let mut matching = Vec::new();
    for symbol in &defined {
        let counts = matcher.count(symbol.name.as_bytes());
        let hit = counts.iter().any(|&c| c > 0) || matcher.exact(symbol.name.as_bytes()).contains(&true);
        for (total, c) in symbol_counts.iter_mut().zip(counts) {
            *total += c;
        }
        if hit {
            matching.push(symbol.clone());
        }
    }
    let fields = Fields {
        path: (&file.path_counts, file.path_len),
        content: (&content, text.len() as f64),
        symbols: Some((&symbol_counts, defined.len().max(1) as f64)),
        exact,
    };
    let score = bm25f(terms, stats, &fields);
    let relevance = relevance(
        exact,
        distinct(terms, &content, true),
        distinct(terms, &file.path_counts, false),
        distinct(terms, &symbol_counts, false),
    )?;
    let lines: Vec<u32> = defined.iter().map(|s| s.line).collect();
    Some(Hit {
        rel: file.rel.clone(),
        relevance,
        score,
        lines: text.lines().count(),
        complete: read.complete,
        context: context_lines(&text, matcher, &lines),
        first: defined.iter().take(2).cloned().collect(),
        matching,
        imports: symbols::imports(&text),
    })
}

/// Rank `found` (the walk's files under `root`) for `terms`.
pub fn discover(
    root: &Path,
    found: Vec<Found>,
    terms: &Terms,
    limits: &Limits,
    deadline: &Deadline,
) -> Findings {
    let matcher = Matcher::new(terms);
    let mut files: Vec<File> = found
        .into_iter()
        .map(|f| {
            let rel = f.path.strip_prefix(root).unwrap_or(&f.path).to_path_buf();
            let (path_counts, path_len) = path_counts(&matcher, terms, &rel);
            File {
                rel,
                path: f.path,
                len: f.len,
                path_counts,
                path_len,
                content: None,
                content_len: 0.0,
                exact: Vec::new(),
            }
        })
        .collect();
    let mut findings = Findings { walked: files.len(), ..Findings::default() };
    findings.prescanned = prescan(&mut files, &matcher, limits, &deadline.token);
    let stats = stats(&files, terms);
    let empty = vec![0u32; matcher.len];
    let mut ranked: Vec<(f64, usize)> = files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let content = f.content.as_deref().unwrap_or(&empty);
            let exact = f.exact.iter().filter(|&&e| e).count();
            let any = exact > 0 || f.path_counts.iter().chain(content).any(|&c| c > 0);
            any.then(|| {
                let fields = Fields {
                    path: (&f.path_counts, f.path_len),
                    content: (content, f.content_len),
                    symbols: None,
                    exact,
                };
                (bm25f(terms, &stats, &fields), i)
            })
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(files[a.1].rel.cmp(&files[b.1].rel)));
    ranked.truncate(limits.max_candidates);
    let candidates: Vec<&File> = ranked.iter().map(|&(_, i)| &files[i]).collect();
    let evaluated = parallel(&candidates, &deadline.token, |file| {
        evaluate(file, terms, &matcher, &stats, limits, &deadline.flag)
    });
    findings.read = evaluated.iter().filter(|e| e.is_some()).count();
    findings.hits = evaluated.into_iter().flatten().flatten().collect();
    findings.hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.rel.cmp(&b.rel)));
    findings.partial = deadline.fired();
    findings
}
