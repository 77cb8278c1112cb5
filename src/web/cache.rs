//! The webfetch response cache (seed 003): entries live 15 minutes, and the least recently used go first when
//! the total size passes its bound.
//!
//! Owns the eviction rules only. Must not know what is cached or how keys are made (the webfetch tool
//! decides: plain GETs by URL and format). Times are passed in, so tests need no clock.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a fetched page is reused.
pub const CACHE_TTL: Duration = Duration::from_secs(15 * 60);
/// The total size of the cached values.
pub const CACHE_BYTES: usize = 32 * 1024 * 1024;

struct Entry<V> {
    value: Arc<V>,
    bytes: usize,
    stored: Instant,
    used: u64,
}

/// A size-bounded LRU with a time to live. Not synchronised: the owner wraps it in a mutex.
pub struct Cache<V> {
    entries: HashMap<String, Entry<V>>,
    total: usize,
    max_bytes: usize,
    ttl: Duration,
    tick: u64,
}

impl<V> Cache<V> {
    pub fn new(max_bytes: usize, ttl: Duration) -> Self {
        Self { entries: HashMap::new(), total: 0, max_bytes, ttl, tick: 0 }
    }

    /// The live value under `key`; an expired one is dropped.
    pub fn get(&mut self, key: &str, now: Instant) -> Option<Arc<V>> {
        let expired = now.saturating_duration_since(self.entries.get(key)?.stored) >= self.ttl;
        if expired {
            self.remove(key);
            return None;
        }
        self.tick += 1;
        let entry = self.entries.get_mut(key)?;
        entry.used = self.tick;
        Some(entry.value.clone())
    }

    /// Store `value` (of `bytes` bytes); a value larger than the whole cache is not kept.
    pub fn put(&mut self, key: String, value: V, bytes: usize, now: Instant) {
        self.remove(&key);
        if bytes > self.max_bytes {
            return;
        }
        while self.total + bytes > self.max_bytes {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| k.clone()) else {
                break;
            };
            self.remove(&oldest);
        }
        self.tick += 1;
        self.total += bytes;
        self.entries.insert(key, Entry { value: Arc::new(value), bytes, stored: now, used: self.tick });
    }

    fn remove(&mut self, key: &str) {
        if let Some(entry) = self.entries.remove(key) {
            self.total -= entry.bytes;
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The total size of the values held.
    pub fn bytes(&self) -> usize {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_after_the_time_to_live() {
        let start = Instant::now();
        let mut cache = Cache::new(100, CACHE_TTL);
        cache.put("a".into(), "page", 4, start);
        assert_eq!(cache.get("a", start + Duration::from_secs(14 * 60)).as_deref(), Some(&"page"));
        assert_eq!(cache.get("a", start + CACHE_TTL), None);
        assert_eq!((cache.len(), cache.bytes()), (0, 0));
    }

    #[test]
    fn the_least_recently_used_entries_go_first_when_the_size_bound_is_passed() {
        let now = Instant::now();
        let mut cache = Cache::new(10, CACHE_TTL);
        cache.put("a".into(), 1, 4, now);
        cache.put("b".into(), 2, 4, now);
        assert_eq!(cache.get("a", now).as_deref(), Some(&1), "a is now the most recently used");
        cache.put("c".into(), 3, 4, now);
        assert_eq!(cache.get("b", now), None, "b was the least recently used");
        assert_eq!(cache.get("a", now).as_deref(), Some(&1));
        assert_eq!(cache.get("c", now).as_deref(), Some(&3));
        assert_eq!(cache.bytes(), 8);
    }

    #[test]
    fn a_value_larger_than_the_cache_is_not_kept_and_a_replaced_key_is_counted_once() {
        let now = Instant::now();
        let mut cache = Cache::new(10, CACHE_TTL);
        cache.put("big".into(), 0, 11, now);
        assert!(cache.is_empty());
        cache.put("a".into(), 1, 6, now);
        cache.put("a".into(), 2, 7, now);
        assert_eq!((cache.len(), cache.bytes()), (1, 7));
        assert_eq!(cache.get("a", now).as_deref(), Some(&2));
    }
}
