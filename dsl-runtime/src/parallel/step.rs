//! One optimizer step's exchange, split by owner (ZeRO stage 1): each rank sends the gradient
//! of every parameter to the parameter's owner and its step output to every rank; each owner
//! adds its parameters' gradients up in rank order and steps them, then sends their new values
//! to every rank. Also the check that the ranks' weights stay equal.

use std::time::{Duration, Instant};

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};

use super::owners::Owners;
use super::wire::{Share, decode_tensors, encode_tensors};
use super::{Collective, Gathered, ItemCodec, ParallelError};
use crate::erased::{AnyModule, ModelRef};

/// What the ranks agreed on for one group of batches.
pub(crate) struct Exchanged<O> {
    /// The sum of the group's gradients of the parameters this rank owns, as one process
    /// accumulating them would have it.
    pub grads: GradientsParams,
    /// The group's step outputs in batch order.
    pub items: Vec<O>,
    /// Ctrl-C or SIGTERM reached some rank: every rank stops after this step.
    pub interrupted: bool,
}

/// The fit loop's side of data-parallel training.
pub(crate) struct Parallel<O> {
    pub group: &'static dyn Collective,
    codec: ItemCodec<O>,
    /// Where gradients and outputs from other ranks are rebuilt: the training device's inner
    /// (non-autodiff) device, where `backward` puts gradients.
    device: Device,
    owners: Owners,
    pub traffic: Traffic,
    /// The bytes for the other ranks (one after the other, cut after each of `ends`), and the
    /// receive buffer, kept between steps: a reused buffer is neither zeroed nor faulted in
    /// again.
    send: Vec<u8>,
    ends: Vec<usize>,
    received: Vec<u8>,
    /// Rank 0: every rank's optimizer state as of the last [`Parallel::gather_state`], for
    /// the checkpoint rank 0 writes.
    gathered_state: Option<burn::tensor::Bytes>,
}

/// What the run's summary says of the exchanges: time spent exchanging and training (steps,
/// exchanges and metrics), bytes this rank sent, optimizer steps, the last checksum of the
/// weights, and the share of the parameters whose state this rank keeps. Apart from
/// [`Parallel`], which is compiled per step output type.
pub(crate) struct Traffic {
    ranks: usize,
    waited: Duration,
    pub trained: Duration,
    sent: usize,
    steps: usize,
    checksum: Option<u32>,
    /// This rank's parameter values and all of them.
    owned: (usize, usize),
}

impl<O> Parallel<O> {
    /// The exchange of a rank whose model is `model` (its parameter ids already shared,
    /// [`same_ids`]).
    pub fn new(
        group: &'static dyn Collective,
        codec: ItemCodec<O>,
        device: Device,
        model: ModelRef<'_>,
    ) -> Self {
        let owners = Owners::of(model, group.size(), group.rank());
        Self {
            group,
            codec,
            device,
            traffic: Traffic {
                ranks: group.size(),
                waited: Duration::ZERO,
                trained: Duration::ZERO,
                sent: 0,
                steps: 0,
                checksum: None,
                owned: owners.share(),
            },
            owners,
            send: Vec::new(),
            ends: Vec::with_capacity(group.size()),
            received: Vec::new(),
            gathered_state: None,
        }
    }

    pub fn owners(&self) -> &Owners {
        &self.owners
    }

    /// The device gradients live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Sends this rank's batch results (`None` when the group has no batch for it): each
    /// gradient to its parameter's owner, the step output to every rank; receives the
    /// gradients of the parameters this rank owns and every output, for a group of `batches`.
    pub fn exchange(
        &mut self,
        model: ModelRef<'_>,
        mine: Option<(GradientsParams, &O)>,
        batches: usize,
        interrupted: bool,
    ) -> Result<Exchanged<O>, ParallelError> {
        let (rank, size) = (self.group.rank(), self.group.size());
        self.send.clear();
        self.ends.clear();
        let (own, item) = match mine {
            Some((grads, item)) => {
                let mut by_owner = ByOwner {
                    grads: &grads,
                    owners: &self.owners,
                    index: 0,
                    to: vec![Vec::new(); size],
                };
                model.visit(&mut by_owner);
                let item = (self.codec.parts)(item);
                for (to, grads) in by_owner.to.iter().enumerate() {
                    if to != rank {
                        Share::encode(interrupted, grads, &item, &mut self.send);
                    }
                    self.ends.push(self.send.len());
                }
                (Some(grads), item)
            }
            None => {
                for to in 0..size {
                    if to != rank {
                        Share::encode(interrupted, &[], &[], &mut self.send);
                    }
                    self.ends.push(self.send.len());
                }
                (None, Vec::new())
            }
        };
        let started = Instant::now();
        let gathered =
            self.group
                .all_to_all(&self.send, &self.ends, std::mem::take(&mut self.received));
        self.traffic.waited += started.elapsed();
        self.traffic.sent += self.send.len();
        self.traffic.steps += 1;
        // This rank's own gradients and output are used as they are; the others' are read back.
        let mut own = own.map(|grads| (grads, item));
        let mut sources = Vec::with_capacity(batches);
        let mut items = Vec::with_capacity(batches);
        let mut interrupted = interrupted;
        for other in 0..gathered.len() {
            if other == rank {
                if let Some((grads, item)) = own.take() {
                    sources.push(Grads::Own(grads));
                    items.push(self.item(other, item)?);
                }
                continue;
            }
            let wire = |message| ParallelError::Wire {
                rank: other,
                message,
            };
            let share = Share::decode(gathered.of(other)).map_err(wire)?;
            interrupted |= share.interrupted;
            if other < batches {
                sources.push(Grads::Sent(share.grads.into_iter()));
                items.push(self.item(other, share.item)?);
            }
        }
        self.received = gathered.into_buffer();
        let mut sum = SumGrads {
            sources,
            owners: &self.owners,
            index: 0,
            device: &self.device,
            grads: GradientsParams::new(),
        };
        model.visit(&mut sum);
        Ok(Exchanged {
            grads: sum.grads,
            items,
            interrupted,
        })
    }

    /// After the optimizer stepped this rank's parameters: their new values to every rank,
    /// and every other rank's into `model`.
    pub fn share_weights<M: Module + 'static>(&mut self, model: M) -> Result<M, ParallelError> {
        let mut values = OwnValues {
            owners: &self.owners,
            index: 0,
            values: Vec::new(),
        };
        model.visit(&mut values);
        let values = values.values;
        let gathered = self.all_gather_tensors(&values)?;
        let mut set = SetValues {
            owners: &self.owners,
            index: 0,
            sent: gathered.into_iter().map(Vec::into_iter).collect(),
        };
        Ok(AnyModule::new(model).map(&mut set).into_inner())
    }

    /// Every rank's `tensors` (one per parameter it owns, in visiting order) on every rank.
    pub fn all_gather_tensors(
        &mut self,
        tensors: &[Option<TensorData>],
    ) -> Result<Vec<Vec<Option<TensorData>>>, ParallelError> {
        self.send.clear();
        encode_tensors(tensors, &mut self.send);
        let started = Instant::now();
        let gathered = self
            .group
            .all_gather(&self.send, std::mem::take(&mut self.received));
        self.traffic.waited += started.elapsed();
        self.traffic.sent += self.send.len();
        let all = decode_all(&gathered);
        self.received = gathered.into_buffer();
        all
    }

    /// Every rank's optimizer state (`state`, the burnpack bytes of the parameters it owns)
    /// to rank 0, which keeps them for its next checkpoint.
    pub fn gather_state(&mut self, state: &[u8]) -> Result<(), ParallelError> {
        self.gathered_state = match self.group.gather(state) {
            Some(all) => {
                let parts: Vec<&[u8]> = (0..all.len()).map(|rank| all.of(rank)).collect();
                Some(super::state::merge(&parts)?)
            }
            None => None,
        };
        Ok(())
    }

    /// The optimizer state of the whole model, on rank 0 after [`Parallel::gather_state`].
    pub fn gathered_state(&self) -> Option<&burn::tensor::Bytes> {
        self.gathered_state.as_ref()
    }

    /// Rank `rank`'s step output from its tensors.
    fn item(&self, rank: usize, parts: Vec<TensorData>) -> Result<O, ParallelError> {
        (self.codec.from_parts)(&mut parts.into_iter(), &self.device)
            .map_err(|message| ParallelError::Wire { rank, message })
    }

    /// Compares the ranks' weights after `epoch`.
    pub fn same_weights(&mut self, model: ModelRef<'_>, epoch: usize) -> Result<(), ParallelError> {
        let mut sum = Checksum(0);
        model.visit(&mut sum);
        let gathered = self.group.all_gather(&sum.0.to_le_bytes(), Vec::new());
        let checksums: Vec<u32> = (0..gathered.len())
            .map(|rank| u32::from_le_bytes(gathered.of(rank)[..4].try_into().expect("4 bytes")))
            .collect();
        if checksums.iter().any(|&c| c != sum.0) {
            return Err(ParallelError::Diverged { epoch, checksums });
        }
        self.traffic.checksum = Some(sum.0);
        Ok(())
    }
}

/// The outputs of a split the ranks measure together (validation): rank `r` measures batches
/// `r`, `r + N`, ... of the split, and every rank receives every output, in batch order, to
/// feed its metrics the one-process values.
pub(crate) struct Outputs<O> {
    pub group: &'static dyn Collective,
    codec: ItemCodec<O>,
    device: Device,
    send: Vec<u8>,
    received: Vec<u8>,
    /// Batches this rank measured, and all of them.
    measured: (usize, usize),
}

impl<O> Outputs<O> {
    pub fn new(group: &'static dyn Collective, codec: ItemCodec<O>, device: Device) -> Self {
        Self {
            group,
            codec,
            device,
            send: Vec::new(),
            received: Vec::new(),
            measured: (0, 0),
        }
    }

    /// How the outputs travel.
    pub fn codec(&self) -> ItemCodec<O> {
        self.codec
    }

    /// What the run's summary says of the split measured together.
    pub fn summary(&self) -> String {
        format!(
            "validation divided: rank {} measured {} of {} batches",
            self.group.rank(),
            self.measured.0,
            self.measured.1
        )
    }

    /// Every output of a group of `batches` batches, in batch order, given this rank's (`None`
    /// when the group has no batch for it).
    pub fn gather(&mut self, mine: Option<&O>, batches: usize) -> Result<Vec<O>, ParallelError> {
        let rank = self.group.rank();
        self.measured.0 += usize::from(mine.is_some());
        self.measured.1 += batches;
        let own = mine.map(|item| (self.codec.parts)(item));
        self.send.clear();
        Share::encode(
            false,
            &[],
            own.as_deref().unwrap_or_default(),
            &mut self.send,
        );
        let gathered = self
            .group
            .all_gather(&self.send, std::mem::take(&mut self.received));
        let mut own = own;
        let mut items = Vec::with_capacity(batches);
        for other in 0..batches {
            let mine = if other == rank { own.take() } else { None };
            let parts = match mine {
                Some(parts) => parts,
                None => {
                    Share::decode(gathered.of(other))
                        .map_err(|message| ParallelError::Wire {
                            rank: other,
                            message,
                        })?
                        .item
                }
            };
            let item = (self.codec.from_parts)(&mut parts.into_iter(), &self.device).map_err(
                |message| ParallelError::Wire {
                    rank: other,
                    message,
                },
            )?;
            items.push(item);
        }
        self.received = gathered.into_buffer();
        Ok(items)
    }
}

/// Each rank's tensor list in a gather.
fn decode_all(gathered: &Gathered) -> Result<Vec<Vec<Option<TensorData>>>, ParallelError> {
    (0..gathered.len())
        .map(|rank| {
            decode_tensors(gathered.of(rank))
                .map_err(|message| ParallelError::Wire { rank, message })
        })
        .collect()
}

/// `model` with rank 0's parameter ids. Each process draws its own ids, and the optimizer
/// state is keyed by them: with one set of ids, the state each owner keeps merges into one
/// checkpoint, and a checkpoint's state splits by owner.
pub(crate) fn same_ids<M: Module + 'static>(group: &dyn Collective, model: M) -> M {
    let mut ids = Ids(Vec::new());
    model.visit(&mut ids);
    let bytes: Vec<u8> = ids.0.iter().flat_map(|id| id.to_le_bytes()).collect();
    let bytes = group.broadcast(bytes);
    if group.rank() == 0 {
        return model;
    }
    let mut set = SetIds(
        bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect::<Vec<_>>()
            .into_iter(),
    );
    AnyModule::new(model).map(&mut set).into_inner()
}

impl Traffic {
    /// The line the run's summary ends with: that the weights stayed equal, and what the
    /// exchanges cost.
    pub fn summary(&self) -> String {
        let per_step = self.sent / self.steps.max(1);
        let share = self.waited.as_secs_f64() / self.trained.as_secs_f64().max(f64::EPSILON);
        format!(
            "data parallel over {} ranks: weights equal on every rank at each epoch end{}; rank 0 steps and keeps the optimizer state of {} of {} parameter values; {} bytes sent per optimizer step by each rank, exchanges {:.1} % of training time",
            self.ranks,
            self.checksum
                .map_or_else(String::new, |c| format!(" (crc32c {c:08x})")),
            self.owned.0,
            self.owned.1,
            per_step,
            100.0 * share,
        )
    }
}

/// This rank's gradients of the parameters other ranks own, by owner, in visiting order.
struct ByOwner<'a> {
    grads: &'a GradientsParams,
    owners: &'a Owners,
    index: usize,
    to: Vec<Vec<Option<TensorData>>>,
}

impl ModuleVisitor for ByOwner<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let index = self.index;
        self.index += 1;
        if self.owners.mine(index) {
            return;
        }
        let grad = self.grads.get::<D>(param.id);
        self.to[self.owners.owner(index)].push(grad.map(|g| g.into_data()));
    }
}

/// A rank's gradients: this rank's own, or another's as received (of this rank's parameters).
enum Grads {
    Own(GradientsParams),
    Sent(std::vec::IntoIter<Option<TensorData>>),
}

/// Adds the gradients of each parameter this rank owns up in rank order, with the tensor
/// additions of Burn's `GradientsAccumulator` (`sum.add(next)`), so the sum has the
/// one-process sum's bits.
struct SumGrads<'a> {
    sources: Vec<Grads>,
    owners: &'a Owners,
    index: usize,
    device: &'a Device,
    grads: GradientsParams,
}

impl ModuleVisitor for SumGrads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let index = self.index;
        self.index += 1;
        if !self.owners.mine(index) {
            return;
        }
        let mut sum: Option<Tensor<D>> = None;
        for source in &mut self.sources {
            let grad = match source {
                Grads::Own(grads) => grads.remove::<D>(param.id),
                Grads::Sent(grads) => grads.next().flatten().map(|data| {
                    let dtype = data.dtype();
                    Tensor::<D>::from_data(data, (self.device, dtype))
                }),
            };
            let Some(grad) = grad else { continue };
            sum = Some(match sum {
                Some(sum) => sum.add(grad),
                None => grad,
            });
        }
        if let Some(sum) = sum {
            self.grads.register(param.id, sum);
        }
    }
}

/// The values of the parameters this rank owns, in visiting order.
struct OwnValues<'a> {
    owners: &'a Owners,
    index: usize,
    values: Vec<Option<TensorData>>,
}

impl ModuleVisitor for OwnValues<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.owners.mine(self.index) {
            self.values.push(Some(param.val().into_data()));
        }
        self.index += 1;
    }
}

/// Puts each owner's values into the parameters other ranks own; a parameter keeps its
/// device and whether it takes a gradient.
struct SetValues<'a> {
    owners: &'a Owners,
    index: usize,
    sent: Vec<std::vec::IntoIter<Option<TensorData>>>,
}

impl ModuleMapper for SetValues<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let index = self.index;
        self.index += 1;
        if self.owners.mine(index) {
            return param;
        }
        let Some(Some(data)) = self.sent[self.owners.owner(index)].next() else {
            return param;
        };
        param.map(|old| {
            let dtype = data.dtype();
            let value = Tensor::<D>::from_data(data, (&old.device(), dtype));
            if old.is_require_grad() {
                value.require_grad()
            } else {
                value
            }
        })
    }
}

/// The ids of the float parameters, in visiting order.
struct Ids(Vec<u64>);

impl ModuleVisitor for Ids {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.push(param.id.val());
    }
}

/// Gives the float parameters the ids of [`Ids`], in visiting order.
struct SetIds(std::vec::IntoIter<u64>);

impl ModuleMapper for SetIds {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let Some(id) = self.0.next() else {
            return param;
        };
        let (_, value, mapper) = param.consume();
        Param::from_mapped_value(ParamId::from(id), value, mapper)
    }
}

/// CRC-32C of every float parameter's bytes, in visiting order.
struct Checksum(u32);

impl ModuleVisitor for Checksum {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0 = crc32c::crc32c_append(self.0, param.val().into_data().as_bytes());
    }
}
