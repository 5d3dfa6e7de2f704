//! Which rank owns each parameter: the rank that adds up its gradients, applies the optimizer
//! step to it and alone keeps its optimizer state (ZeRO stage 1).

use std::collections::HashSet;

use burn::module::{ModuleVisitor, Param};
use burn::tensor::Tensor;

use crate::erased::ModelRef;

/// The owner of each float parameter, in the model's visiting order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Owners {
    owner: Vec<usize>,
    /// The ids of this rank's parameters, which split an optimizer record: one lookup per
    /// entry.
    own_ids: HashSet<u64>,
    elements: Vec<usize>,
    rank: usize,
}

impl Owners {
    /// Owners for `model`'s float parameters over `ranks` ranks, seen from `rank`.
    pub fn of(model: ModelRef<'_>, ranks: usize, rank: usize) -> Self {
        let mut sizes = Sizes::default();
        model.visit(&mut sizes);
        let owner = balance(&sizes.elements, ranks);
        let own_ids = sizes
            .ids
            .iter()
            .zip(&owner)
            .filter(|&(_, &owner)| owner == rank)
            .map(|(&id, _)| id)
            .collect();
        Self {
            owner,
            own_ids,
            elements: sizes.elements,
            rank,
        }
    }

    /// The number of float parameters.
    pub fn len(&self) -> usize {
        self.owner.len()
    }

    /// The owner of the `index`-th float parameter.
    pub fn owner(&self, index: usize) -> usize {
        self.owner[index]
    }

    /// Whether this rank owns the `index`-th float parameter.
    pub fn mine(&self, index: usize) -> bool {
        self.owner[index] == self.rank
    }

    /// The parameter values whose optimizer state this rank keeps, and all of them.
    pub fn share(&self) -> (usize, usize) {
        let mine = (0..self.owner.len())
            .filter(|&i| self.mine(i))
            .map(|i| self.elements[i])
            .sum();
        (mine, self.elements.iter().sum())
    }

    /// Whether this rank owns the parameter with id `id`.
    pub fn owns_id(&self, id: u64) -> bool {
        self.own_ids.contains(&id)
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

#[derive(Default)]
struct Sizes {
    elements: Vec<usize>,
    ids: Vec<u64>,
}

impl ModuleVisitor for Sizes {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.elements.push(param.lazy_shape().num_elements());
        self.ids.push(param.id.val());
    }
}

#[cfg(test)]
mod tests {
    use super::balance;

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
}
