//! A dataset's fingerprint at a bounded cost, whatever its items are.
//!
//! A run fingerprints its splits before the first step, on every run, resume and `--verify`, so
//! the cost must not grow with the items: hashing the `Debug` text of 1,024 items of 784 floats
//! cost 30 % of a short run, and image-sized items would have taken a minute. Two bounds keep it
//! small. The bytes hashed per dataset are capped ([`BYTE_BUDGET`] for items that offer their
//! values, [`TEXT_BUDGET`] for `Debug` text, which costs ~150 instructions a byte to format),
//! and the number of items sampled shrinks as items grow (down to [`MIN_SAMPLED`], or
//! [`MIN_SAMPLED_TEXT`] for `Debug` text, from [`SAMPLED_ITEMS`], chosen from the first item's
//! size), so the items fetched (a clone each, for Burn's in-memory datasets) stay bounded too.
//! An item larger than its share of the budget is hashed up to that share: a change past it,
//! like a change to an item outside the sample, goes unseen.
//!
//! Three ways to read an item, picked per item type by method lookup ("autoref
//! specialization", which works on the concrete types of an expansion): `training!` calls
//! `(&&&Probe(dataset)).fingerprint()` with [`ByValues`], [`ByDebug`] and [`ByCount`] in
//! scope. Lookup dereferences the receiver one level at a time and takes the first trait
//! implemented at that level: values ([`Fingerprint`], which `#[derive(Batch)]` samples,
//! numbers, strings, arrays, vectors and tuples implement), then `Debug` text, then the count.

use std::fmt::{Debug, Write as _};

use burn::data::dataset::Dataset;

use super::DataFingerprint;

/// Items hashed per dataset at most, evenly spaced over it (small items).
pub const SAMPLED_ITEMS: usize = 1024;
/// Items hashed per dataset at least (large items), when it has that many.
pub const MIN_SAMPLED: usize = 32;
/// The same for items read as `Debug` text. Fewer: a `Debug` impl stopped at the cap still
/// steps through the rest of its fields and elements (each a no-op after the error), ~0.4 ms for
/// an image of 150,528 floats, so the floor of items is what bounds the cost there.
pub const MIN_SAMPLED_TEXT: usize = 8;
/// Bytes of item values hashed per dataset at most: ~1 ms of CRC-32C.
pub const BYTE_BUDGET: usize = 8 << 20;
/// Bytes of `Debug` text formatted and hashed per dataset at most: ~1 ms of formatting.
pub const TEXT_BUDGET: usize = 64 << 10;

/// A running CRC-32C over at most `cap` bytes; what is offered past the cap is dropped.
pub struct ItemHasher {
    crc: u32,
    fed: usize,
    cap: usize,
    /// Only count the bytes offered (to size an item), hash nothing.
    measuring: bool,
}

impl ItemHasher {
    fn new(cap: usize, measuring: bool) -> Self {
        Self {
            crc: 0,
            fed: 0,
            cap,
            measuring,
        }
    }

    /// Whether the cap is reached: a type with many values may stop early.
    pub fn full(&self) -> bool {
        self.fed >= self.cap
    }

    /// Hashes `bytes`, or the part of them that fits under the cap.
    pub fn write(&mut self, bytes: &[u8]) {
        let take = bytes.len().min(self.cap - self.fed.min(self.cap));
        if !self.measuring {
            self.crc = crc32c::crc32c_append(self.crc, &bytes[..take]);
        }
        self.fed += take;
    }
}

/// `Debug` text goes straight into the hash; past the cap, formatting is stopped with an
/// error (every `Debug` impl propagates it), so a huge item costs no more than the cap.
impl std::fmt::Write for ItemHasher {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.write(s.as_bytes());
        if self.full() {
            Err(std::fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// An item's values as bytes for its dataset's fingerprint, without formatting them.
/// `#[derive(Batch)]` implements it for a sample struct, field by field.
pub trait Fingerprint {
    /// Feeds this value's bytes to `hasher`.
    fn fingerprint(&self, hasher: &mut ItemHasher);

    /// Feeds a slice of values; numbers override it to hash many values per call.
    fn fingerprint_slice(values: &[Self], hasher: &mut ItemHasher)
    where
        Self: Sized,
    {
        for value in values {
            if hasher.full() {
                return;
            }
            value.fingerprint(hasher);
        }
    }
}

macro_rules! numbers {
    ($($ty:ty),*) => {$(
        impl Fingerprint for $ty {
            fn fingerprint(&self, hasher: &mut ItemHasher) {
                hasher.write(&self.to_le_bytes());
            }

            fn fingerprint_slice(values: &[Self], hasher: &mut ItemHasher) {
                // Packed into a buffer first: one CRC call per 4 KiB, not per value.
                const N: usize = 4096 / std::mem::size_of::<$ty>();
                let mut buffer = [0_u8; 4096];
                for chunk in values.chunks(N) {
                    if hasher.full() {
                        return;
                    }
                    let mut len = 0;
                    for value in chunk {
                        let bytes = value.to_le_bytes();
                        buffer[len..len + bytes.len()].copy_from_slice(&bytes);
                        len += bytes.len();
                    }
                    hasher.write(&buffer[..len]);
                }
            }
        }
    )*};
}
numbers!(
    f32, f64, u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
);

impl Fingerprint for bool {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        hasher.write(&[u8::from(*self)]);
    }
}

impl Fingerprint for char {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        hasher.write(&u32::from(*self).to_le_bytes());
    }
}

impl Fingerprint for str {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        // The length first, so that ("ab", "c") and ("a", "bc") differ.
        self.len().fingerprint(hasher);
        hasher.write(self.as_bytes());
    }
}

impl Fingerprint for String {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        self.as_str().fingerprint(hasher);
    }
}

impl<T: Fingerprint> Fingerprint for [T] {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        self.len().fingerprint(hasher);
        T::fingerprint_slice(self, hasher);
    }
}

impl<T: Fingerprint, const N: usize> Fingerprint for [T; N] {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        T::fingerprint_slice(self, hasher);
    }
}

impl<T: Fingerprint> Fingerprint for Vec<T> {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        self.as_slice().fingerprint(hasher);
    }
}

impl<T: Fingerprint + ?Sized> Fingerprint for &T {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        (**self).fingerprint(hasher);
    }
}

impl<T: Fingerprint + ?Sized> Fingerprint for Box<T> {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        (**self).fingerprint(hasher);
    }
}

impl<T: Fingerprint> Fingerprint for Option<T> {
    fn fingerprint(&self, hasher: &mut ItemHasher) {
        match self {
            None => hasher.write(&[0]),
            Some(value) => {
                hasher.write(&[1]);
                value.fingerprint(hasher);
            }
        }
    }
}

macro_rules! tuples {
    ($(($($name:ident),+))*) => {$(
        impl<$($name: Fingerprint),+> Fingerprint for ($($name,)+) {
            #[allow(non_snake_case)]
            fn fingerprint(&self, hasher: &mut ItemHasher) {
                let ($($name,)+) = self;
                $($name.fingerprint(hasher);)+
            }
        }
    )*};
}
tuples!((A)(A, B)(A, B, C)(A, B, C, D)(A, B, C, D, E)(
    A, B, C, D, E, F
));

/// A dataset to fingerprint; see the module docs for how its items are read.
pub struct Probe<'a, I>(pub &'a dyn Dataset<I>);

// By hand: a derive would ask `I: Copy`, and `ByCount` takes the probe by value.
impl<I> Clone for Probe<'_, I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<I> Copy for Probe<'_, I> {}

/// The fingerprint of a dataset of [`Fingerprint`] items: count and hash of their values.
pub trait ByValues {
    /// See [`DataFingerprint`].
    fn fingerprint(self) -> DataFingerprint;
}

/// The fingerprint of a dataset of `Debug` items: count and hash of their text.
pub trait ByDebug {
    /// See [`DataFingerprint`].
    fn fingerprint(self) -> DataFingerprint;
}

/// The fingerprint of a dataset of other items: the count alone.
pub trait ByCount {
    /// See [`DataFingerprint`].
    fn fingerprint(self) -> DataFingerprint;
}

impl<I: Fingerprint> ByValues for &&Probe<'_, I> {
    fn fingerprint(self) -> DataFingerprint {
        sample(self.0, BYTE_BUDGET, MIN_SAMPLED, |item, hasher| {
            item.fingerprint(hasher)
        })
    }
}

impl<I: Debug> ByDebug for &Probe<'_, I> {
    fn fingerprint(self) -> DataFingerprint {
        sample(self.0, TEXT_BUDGET, MIN_SAMPLED_TEXT, |item, hasher| {
            // An error here is the cap reached: the text so far is hashed.
            let _ = write!(hasher, "{item:?}");
        })
    }
}

impl<I> ByCount for Probe<'_, I> {
    fn fingerprint(self) -> DataFingerprint {
        DataFingerprint {
            items: self.0.len(),
            hash: None,
        }
    }
}

/// Hashes evenly spaced items of `data` with `feed`, within `budget` bytes: the first item's
/// size sets how many are sampled (`fewest` ..= [`SAMPLED_ITEMS`]), and each gets an equal
/// share of the budget.
fn sample<I>(
    data: &dyn Dataset<I>,
    budget: usize,
    fewest: usize,
    feed: impl Fn(&I, &mut ItemHasher),
) -> DataFingerprint {
    let items = data.len();
    let mut crc = 0;
    if let Ok(first) = data.get(0) {
        let mut size = ItemHasher::new(budget, true);
        feed(&first, &mut size);
        let count = (budget / size.fed.max(1)).clamp(fewest, SAMPLED_ITEMS);
        let share = budget / count;
        for (k, index) in sampled(items, count).enumerate() {
            let fetched;
            let item = if k == 0 {
                &first
            } else {
                // An item that cannot be read ends the sample there.
                let Ok(item) = data.get(index) else { break };
                fetched = item;
                &fetched
            };
            let mut hasher = ItemHasher::new(share, false);
            feed(item, &mut hasher);
            // The bytes hashed, so that an item cut short does not equal a shorter item.
            crc = crc32c::crc32c_append(crc, &hasher.crc.to_le_bytes());
            crc = crc32c::crc32c_append(crc, &hasher.fed.to_le_bytes());
        }
    }
    DataFingerprint {
        items,
        hash: Some(format!("{crc:08x}")),
    }
}

/// Up to `count` indices of `0..len`, evenly spaced, the first and last included.
fn sampled(len: usize, count: usize) -> impl Iterator<Item = usize> {
    let n = len.min(count);
    (0..n).map(move |k| if n == 1 { 0 } else { k * (len - 1) / (n - 1) })
}

#[cfg(test)]
// The probe's references are what picks the way items are read (see the module docs); on the
// concrete types of a test clippy sees only the borrows.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;
    use burn::data::dataset::InMemDataset;

    fn print<I: Clone + Send + Sync + Debug + Fingerprint>(items: Vec<I>) -> DataFingerprint {
        let data = InMemDataset::new(items);
        (&&&Probe(&data)).fingerprint()
    }

    fn text<I: Clone + Send + Sync + Debug>(items: Vec<I>) -> DataFingerprint {
        let data = InMemDataset::new(items);
        (&&&Probe(&data)).fingerprint()
    }

    #[test]
    fn a_changed_added_removed_or_reordered_item_changes_the_hash() {
        let ways: [fn(Vec<f32>) -> DataFingerprint; 2] = [print::<f32>, |values| {
            text(values.into_iter().map(Text).collect())
        }];
        for hash in ways {
            let before = hash(vec![1.0, 2.0, 3.0]);
            assert_eq!(before.items, 3);
            assert!(before.hash.is_some());
            for other in [
                vec![1.0, 2.5, 3.0],
                vec![2.0, 1.0, 3.0],
                vec![1.0, 2.0],
                vec![1.0, 2.0, 3.0, 4.0],
            ] {
                assert_ne!(before, hash(other.clone()), "{other:?}");
            }
            assert_eq!(before, hash(vec![1.0, 2.0, 3.0]));
        }
    }

    /// A `Debug` item without values to read: hashed by its text.
    #[derive(Clone, Debug)]
    struct Text(#[allow(dead_code)] f32);

    #[test]
    fn values_are_read_where_the_items_offer_them_else_the_text_else_the_count() {
        // The same items read two ways give two hashes: which one was used shows.
        let values = print(vec![vec![1.0_f32, 2.0]]);
        let debug = text(vec![Text(1.0)]);
        let data = InMemDataset::new(vec![vec![1.0_f32, 2.0]]);
        assert_eq!(values, (&&&Probe(&data)).fingerprint());
        assert_ne!(values.hash, debug.hash);
        #[derive(Clone)]
        struct Opaque;
        let data = InMemDataset::new(vec![Opaque, Opaque]);
        assert_eq!(
            (&&&Probe(&data)).fingerprint(),
            DataFingerprint {
                items: 2,
                hash: None
            }
        );
    }

    #[test]
    fn large_items_cost_a_bounded_number_of_bytes_and_items() {
        // Image-sized items: the first item's size leaves room for the fewest samples.
        let item = vec![0.5_f32; 3 * 224 * 224];
        let mut size = ItemHasher::new(BYTE_BUDGET, true);
        item.fingerprint(&mut size);
        assert_eq!(size.fed, BYTE_BUDGET.min(8 + 4 * item.len()));
        assert_eq!(
            (BYTE_BUDGET / size.fed).clamp(MIN_SAMPLED, SAMPLED_ITEMS),
            MIN_SAMPLED
        );
        // A change inside the hashed share of a sampled item is seen.
        let mut items = vec![item.clone(); 40];
        let before = print(items.clone());
        items[39][100] = 0.25;
        assert_ne!(before, print(items));
    }

    #[test]
    fn huge_debug_text_stops_at_the_cap() {
        let mut hasher = ItemHasher::new(100, false);
        let result = write!(hasher, "{:?}", vec![1.5_f32; 10_000]);
        assert!(result.is_err());
        assert_eq!(hasher.fed, 100);
    }

    #[test]
    fn samples_are_spread_evenly_and_shrink_as_items_grow() {
        let indices: Vec<usize> = sampled(10_000, SAMPLED_ITEMS).collect();
        assert_eq!(indices.len(), SAMPLED_ITEMS);
        assert_eq!((indices[0], indices[SAMPLED_ITEMS - 1]), (0, 9_999));
        assert_eq!(sampled(3, 1024).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(sampled(0, 1024).count(), 0);
        assert_eq!(sampled(10_000, MIN_SAMPLED).count(), MIN_SAMPLED);
    }

    #[test]
    fn lengths_separate_values_that_would_otherwise_run_together() {
        assert_ne!(
            print(vec![(String::from("ab"), String::from("c"))]),
            print(vec![(String::from("a"), String::from("bc"))])
        );
        assert_ne!(
            print(vec![vec![1_u8], vec![]]),
            print(vec![vec![], vec![1_u8]])
        );
    }
}
