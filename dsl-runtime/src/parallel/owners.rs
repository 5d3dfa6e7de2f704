//! Which rank owns which values of the parameters: the rank that adds up their gradients,
//! applies the optimizer step to them and alone keeps their optimizer state (ZeRO stage 1).
//!
//! Two ways to split ([`Sharding`]): whole tensors, each to one rank, or contiguous ranges of
//! the parameters flattened one after the other in visiting order, so that one tensor
//! holding most of the model (an embedding, a head, one wide layer) is split too.

use std::collections::HashMap;
use std::ops::Range;

use burn::module::{ModuleVisitor, Param};
use burn::tensor::Tensor;

use crate::erased::ModelRef;

/// How the parameters are split between the ranks of a data-parallel run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sharding {
    /// Each tensor has one owner, the rank with the fewest values so far (largest first): for
    /// an optimizer whose step of a tensor is not elementwise (LAMB's trust ratio is a norm
    /// over the tensor), or an optimizer step the runtime does not know.
    #[default]
    Tensors,
    /// Each rank owns one contiguous range of the flattened parameters, cut at a row of the
    /// tensor the cut falls in: for optimizers whose step is elementwise (SGD, Adam, AdamW,
    /// RMSProp, AdaGrad, Lion), where stepping a range equals stepping the whole tensor and
    /// keeping that range, bit for bit.
    Ranges,
}

/// The values of one parameter a rank owns: `range` of its flattened elements.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Piece {
    pub rank: usize,
    pub range: Range<usize>,
}

impl Piece {
    /// The shape its values travel and are stepped in, in a tensor of rank `rank`:
    /// `[1, …, 1, values]`.
    pub fn dims(&self, rank: usize) -> Vec<usize> {
        let mut dims = vec![1; rank];
        if let Some(last) = dims.last_mut() {
            *last = self.range.len();
        }
        dims
    }
}

/// One float parameter: its id, shape and who owns which of its values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Owned {
    pub id: u64,
    pub dims: Vec<usize>,
    /// In rank order, as the values lie in the flattened tensor.
    pub pieces: Vec<Piece>,
}

impl Owned {
    pub fn elements(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether `piece` is the whole tensor.
    pub fn is_whole(&self, piece: &Piece) -> bool {
        piece.range.start == 0 && piece.range.end == self.elements()
    }
}

/// The owners of each float parameter, in the model's visiting order, seen from one rank.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Owners {
    params: Vec<Owned>,
    /// Where each parameter's id is in `params`: a split optimizer record is looked up once
    /// per entry.
    by_id: HashMap<u64, usize>,
    rank: usize,
    sharding: Sharding,
}

impl Owners {
    /// Owners for `model`'s float parameters over `ranks` ranks, seen from `rank`.
    pub fn of(model: ModelRef<'_>, ranks: usize, rank: usize, sharding: Sharding) -> Self {
        let mut shapes = Shapes::default();
        model.visit(&mut shapes);
        let elements: Vec<usize> = shapes.dims.iter().map(|d| d.iter().product()).collect();
        let pieces = match sharding {
            Sharding::Tensors => balance(&elements, ranks)
                .into_iter()
                .zip(&elements)
                .map(|(rank, &n)| vec![Piece { rank, range: 0..n }])
                .collect(),
            Sharding::Ranges => {
                let rows: Vec<usize> = shapes
                    .dims
                    .iter()
                    .map(|d| d.last().copied().unwrap_or(1).max(1))
                    .collect();
                ranges(&elements, &rows, ranks)
            }
        };
        let params: Vec<Owned> = shapes
            .ids
            .into_iter()
            .zip(shapes.dims)
            .zip(pieces)
            .map(|((id, dims), pieces)| Owned { id, dims, pieces })
            .collect();
        let by_id = params.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
        Self {
            params,
            by_id,
            rank,
            sharding,
        }
    }

    /// How the parameters are split.
    pub fn sharding(&self) -> Sharding {
        self.sharding
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The `index`-th float parameter.
    pub fn param(&self, index: usize) -> &Owned {
        &self.params[index]
    }

    /// The number of float parameters.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// The piece of the `index`-th parameter rank `rank` owns, if any.
    pub fn piece_of(&self, index: usize, rank: usize) -> Option<&Piece> {
        self.params[index].pieces.iter().find(|p| p.rank == rank)
    }

    /// The piece of the `index`-th parameter this rank owns, if any.
    pub fn mine(&self, index: usize) -> Option<&Piece> {
        self.piece_of(index, self.rank)
    }

    /// With whole tensors ([`Sharding::Tensors`]), the owner of the `index`-th parameter.
    pub fn owner(&self, index: usize) -> usize {
        self.params[index].pieces.first().map_or(0, |p| p.rank)
    }

    /// The parameter with id `id` and this rank's piece of it.
    pub fn by_id(&self, id: u64) -> Option<(&Owned, Option<&Piece>)> {
        let &index = self.by_id.get(&id)?;
        Some((&self.params[index], self.mine(index)))
    }

    /// The parameter values whose optimizer state this rank keeps, and all of them.
    pub fn share(&self) -> (usize, usize) {
        let mine = (0..self.params.len())
            .filter_map(|i| self.mine(i))
            .map(|p| p.range.len())
            .sum();
        let all = self.params.iter().map(Owned::elements).sum();
        (mine, all)
    }
}

/// Each parameter to the rank with the fewest elements so far, largest parameters first (ties:
/// the earlier parameter, the lower rank), so that gradient sums, optimizer steps and state are
/// split about evenly. Every rank computes the same owners from the same model.
fn balance(elements: &[usize], ranks: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..elements.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(elements[i]));
    let mut load = vec![0usize; ranks];
    let mut owner = vec![0; elements.len()];
    for i in order {
        let rank = (0..ranks).min_by_key(|&r| load[r]).expect("one rank");
        load[rank] += elements[i];
        owner[i] = rank;
    }
    owner
}

/// The pieces of each parameter when rank `r` owns the flattened values from cut `r` to cut
/// `r + 1`: cut `r` is the row boundary (a row: the last dimension's length) nearest to
/// `r / ranks` of all values, in the tensor that value falls in, so that each rank owns within
/// one row of an even share.
fn ranges(elements: &[usize], rows: &[usize], ranks: usize) -> Vec<Vec<Piece>> {
    let total: usize = elements.iter().sum();
    let starts: Vec<usize> = elements
        .iter()
        .scan(0, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect();
    let mut cuts = vec![0];
    for r in 1..ranks {
        let target = (total * r + ranks / 2) / ranks;
        // The tensor the target value falls in (the last one that starts at or before it).
        let cut = match (0..elements.len()).rev().find(|&i| starts[i] <= target) {
            Some(i) => {
                let row = rows[i];
                let within = (target - starts[i]).min(elements[i]);
                let snapped = (within + row / 2) / row * row;
                starts[i] + snapped.min(elements[i])
            }
            None => target,
        };
        cuts.push(cut.max(*cuts.last().expect("a cut")));
    }
    cuts.push(total);
    elements
        .iter()
        .zip(&starts)
        .map(|(&n, &start)| {
            (0..ranks)
                .filter_map(|rank| {
                    let from = cuts[rank].clamp(start, start + n);
                    let to = cuts[rank + 1].clamp(start, start + n);
                    (from < to).then(|| Piece {
                        rank,
                        range: from - start..to - start,
                    })
                })
                .collect()
        })
        .collect()
}

#[derive(Default)]
struct Shapes {
    dims: Vec<Vec<usize>>,
    ids: Vec<u64>,
}

impl ModuleVisitor for Shapes {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.dims.push(param.lazy_shape().to_vec());
        self.ids.push(param.id.val());
    }
}

#[cfg(test)]
mod tests {
    use super::{Piece, balance, ranges};

    #[test]
    fn parameters_are_split_by_size_largest_first() {
        // An MLP's weights and biases: 784x256, 256, 256x10, 10.
        let owner = balance(&[200_704, 256, 2_560, 10], 2);
        assert_eq!(owner, [0, 1, 1, 1]);
        let owner = balance(&[64, 16, 48, 3], 2);
        assert_eq!(owner, [0, 1, 1, 0]);
        assert_eq!(balance(&[5, 5, 5], 3), [0, 1, 2]);
        // More ranks than parameters: some own nothing.
        assert_eq!(balance(&[4, 2], 3), [0, 1]);
    }

    /// The values each rank owns.
    fn owned(pieces: &[Vec<Piece>], ranks: usize) -> Vec<usize> {
        (0..ranks)
            .map(|r| {
                pieces
                    .iter()
                    .flatten()
                    .filter(|p| p.rank == r)
                    .map(|p| p.range.len())
                    .sum()
            })
            .collect()
    }

    #[test]
    fn ranges_cut_the_dominant_tensor_at_a_row_and_cover_every_value_once() {
        // 256→768→768→10: one 768x768 matrix holds 74 % of the values.
        let elements = [196_608, 768, 589_824, 768, 7_680, 10];
        let rows = [768, 768, 768, 768, 10, 10];
        let total: usize = elements.iter().sum();
        for ranks in [2, 3, 4] {
            let pieces = ranges(&elements, &rows, ranks);
            for (n, pieces) in elements.iter().zip(&pieces) {
                // Contiguous, in rank order, covering the tensor.
                assert_eq!(pieces.first().unwrap().range.start, 0);
                assert_eq!(pieces.last().unwrap().range.end, *n);
                for pair in pieces.windows(2) {
                    assert_eq!(pair[0].range.end, pair[1].range.start);
                    assert!(pair[0].rank < pair[1].rank);
                }
            }
            let owned = owned(&pieces, ranks);
            assert_eq!(owned.iter().sum::<usize>(), total);
            for values in &owned {
                // Within one row of an even share.
                assert!(values.abs_diff(total / ranks) <= 768, "{owned:?}");
            }
        }
        // At N = 2 the cut falls in the 768x768 matrix, at a row boundary.
        let pieces = ranges(&elements, &rows, 2);
        assert_eq!(pieces[2].len(), 2);
        assert_eq!(pieces[2][0].range.end % 768, 0);
        assert!(pieces[0].iter().all(|p| p.rank == 0));
        assert!(pieces[5].iter().all(|p| p.rank == 1));
    }

    #[test]
    fn more_ranks_than_values_leave_some_ranks_without_a_piece() {
        let pieces = ranges(&[2, 1], &[2, 1], 4);
        assert_eq!(owned(&pieces, 4).iter().sum::<usize>(), 3);
        assert!(pieces.iter().flatten().all(|p| !p.range.is_empty()));
    }
}
