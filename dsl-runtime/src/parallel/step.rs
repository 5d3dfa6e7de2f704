//! One optimizer step's exchange, split by owner (ZeRO stage 1): each rank sends the gradient
//! of every value to the value's owner (a whole tensor or a range of one, [`Owners`]) and its
//! step output to every rank; each owner adds the gradients of its values up in rank order and
//! steps them, then sends their new values to every rank. Also the check that the ranks'
//! weights stay equal.

use std::time::{Duration, Instant};

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};

use super::owners::{Owned, Owners, Piece, Sharding};
use super::wire::{Share, View, decode_tensors, encode_tensors};
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

/// What the run's summary says of the exchanges: where training time goes (waiting in MPI's
/// calls, copies into and out of the messages with the gradient sums, the optimizer step,
/// gathering the state for checkpoints; the rest is forward and backward passes and metrics),
/// bytes this rank sent, optimizer steps, the last checksum of the weights, and the share of
/// the parameter values whose state this rank keeps. Apart from [`Parallel`], which is
/// compiled per step output type.
pub(crate) struct Traffic {
    ranks: usize,
    rank: usize,
    sharding: Sharding,
    waited: Duration,
    copied: Duration,
    pub stepped: Duration,
    saving: Duration,
    pub trained: Duration,
    sent: usize,
    steps: usize,
    checksum: Option<u32>,
    /// This rank's parameter values and all of them.
    owned: (usize, usize),
}

impl<O> Parallel<O> {
    /// The exchange of a rank whose model is `model` (its parameter ids already shared,
    /// [`same_ids`]), its parameters split by `sharding`.
    pub fn new(
        group: &'static dyn Collective,
        codec: ItemCodec<O>,
        device: Device,
        model: ModelRef<'_>,
        sharding: Sharding,
    ) -> Self {
        let owners = Owners::of(model, group.size(), group.rank(), sharding);
        Self {
            group,
            codec,
            device,
            traffic: Traffic {
                ranks: group.size(),
                rank: group.rank(),
                sharding,
                waited: Duration::ZERO,
                copied: Duration::ZERO,
                stepped: Duration::ZERO,
                saving: Duration::ZERO,
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
        let copying = Instant::now();
        self.send.clear();
        self.ends.clear();
        let (own, item) = match mine {
            Some((grads, item)) => {
                let mut by_owner = ByOwner {
                    grads: &grads,
                    owners: &self.owners,
                    index: 0,
                    data: Vec::new(),
                    to: (0..size).map(|_| Vec::new()).collect(),
                };
                model.visit(&mut by_owner);
                let item = (self.codec.parts)(item);
                for to in 0..size {
                    if to != rank {
                        Share::encode(interrupted, &by_owner.views(to), &item, &mut self.send);
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
        self.traffic.copied += copying.elapsed();
        let started = Instant::now();
        let gathered =
            self.group
                .all_to_all(&self.send, &self.ends, std::mem::take(&mut self.received));
        self.traffic.waited += started.elapsed();
        self.traffic.sent += self.send.len();
        self.traffic.steps += 1;
        let copying = Instant::now();
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
        self.traffic.copied += copying.elapsed();
        Ok(Exchanged {
            grads: sum.grads,
            items,
            interrupted,
        })
    }

    /// The line the run's summary ends with, on every rank (each calls it at the end of the
    /// run): every rank's times, gathered.
    pub fn summary(&mut self) -> String {
        let mine: Vec<u8> = self
            .traffic
            .times()
            .iter()
            .flat_map(|t| t.to_le_bytes())
            .collect();
        let gathered = self.group.all_gather(&mine, Vec::new());
        let times: Vec<[f64; 5]> = (0..gathered.len())
            .map(|rank| {
                let bytes = gathered.of(rank);
                std::array::from_fn(|k| {
                    bytes
                        .get(8 * k..8 * k + 8)
                        .and_then(|b| b.try_into().ok())
                        .map_or(0.0, f64::from_le_bytes)
                })
            })
            .collect();
        self.traffic.summary(&times)
    }

    /// The model this rank's optimizer steps: every tensor it owns a range of cut to that
    /// range ([`ToPieces`]); with whole tensors, `model` itself.
    pub fn pieces<M: Module + 'static>(&self, model: M) -> M {
        if self.owners.sharding() == Sharding::Tensors {
            return model;
        }
        let mut pieces = ToPieces {
            owners: &self.owners,
            index: 0,
        };
        AnyModule::new(model).map(&mut pieces).into_inner()
    }

    /// After the optimizer stepped this rank's values (in `stepped`, from
    /// [`Parallel::pieces`]): their new values to every rank, and the whole model again from
    /// every rank's.
    pub fn share_weights<M: Module + 'static>(&mut self, stepped: M) -> Result<M, ParallelError> {
        let started = Instant::now();
        let mut values = OwnValues {
            owners: &self.owners,
            index: 0,
            values: Vec::new(),
        };
        stepped.visit(&mut values);
        self.traffic.copied += started.elapsed();
        let gathered = self.all_gather_tensors(&values.values)?;
        let started = Instant::now();
        let mut set = SetValues {
            owners: &self.owners,
            index: 0,
            sent: gathered.into_iter().map(Vec::into_iter).collect(),
        };
        let model = AnyModule::new(stepped).map(&mut set).into_inner();
        self.traffic.copied += started.elapsed();
        Ok(model)
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
        let started = Instant::now();
        self.gathered_state = match self.group.gather(state) {
            Some(all) => {
                let parts: Vec<&[u8]> = (0..all.len()).map(|rank| all.of(rank)).collect();
                Some(super::state::merge(&parts, &self.owners)?)
            }
            None => None,
        };
        self.traffic.saving += started.elapsed();
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
    /// This rank's times, in seconds: waiting in exchanges, copying and summing, the optimizer
    /// step, gathering state for checkpoints, and all of training.
    fn times(&self) -> [f64; 5] {
        [
            self.waited,
            self.copied,
            self.stepped,
            self.saving,
            self.trained,
        ]
        .map(|d| d.as_secs_f64())
    }

    /// The line the run's summary ends with: that the weights stayed equal, how the parameters
    /// are split, what the exchanges send, and where each rank's training time went (`times`,
    /// by rank).
    fn summary(&self, times: &[[f64; 5]]) -> String {
        let per_step = self.sent / self.steps.max(1);
        let split = match self.sharding {
            Sharding::Ranges => "ranges of the flattened parameters",
            Sharding::Tensors => "whole tensors",
        };
        let by_rank: Vec<String> = times
            .iter()
            .enumerate()
            .map(|(rank, &[waited, copied, stepped, saving, trained])| {
                let percent = |part: f64| 100.0 * part / trained.max(f64::EPSILON);
                let rest = trained - waited - copied - stepped - saving;
                format!(
                    "rank {rank} {trained:.2} s: exchanges {:.1} %, copies and sums {:.1} %, optimizer {:.1} %, state for checkpoints {:.1} %, forward, backward and metrics {:.1} %",
                    percent(waited),
                    percent(copied),
                    percent(stepped),
                    percent(saving),
                    percent(rest),
                )
            })
            .collect();
        format!(
            "data parallel over {} ranks: weights equal on every rank at each epoch end{}; rank {} steps and keeps the optimizer state of {} of {} parameter values ({split}); {} bytes sent per optimizer step by rank {}; training time by rank: {}",
            self.ranks,
            self.checksum
                .map_or_else(String::new, |c| format!(" (crc32c {c:08x})")),
            self.rank,
            self.owned.0,
            self.owned.1,
            per_step,
            self.rank,
            by_rank.join("; "),
        )
    }
}

/// This rank's gradients of the values other ranks own, by owner, in visiting order: each
/// gradient's data read once (`data`), and per owner which of them, and which range, it gets.
struct ByOwner<'a> {
    grads: &'a GradientsParams,
    owners: &'a Owners,
    index: usize,
    data: Vec<TensorData>,
    to: Vec<Vec<Option<Sent>>>,
}

/// What an owner gets of one gradient: `data[grad]`, whole or the values of `piece`.
struct Sent {
    grad: usize,
    piece: Option<Piece>,
}

impl ModuleVisitor for ByOwner<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let owned = self.owners.param(self.index);
        self.index += 1;
        let rank = self.owners.rank();
        let mut others = owned.pieces.iter().filter(|p| p.rank != rank).peekable();
        if others.peek().is_none() {
            return;
        }
        let grad = self.grads.get::<D>(param.id).map(Tensor::into_data);
        let index = self.data.len();
        self.data.extend(grad);
        for piece in others {
            let sent = (self.data.len() > index).then(|| Sent {
                grad: index,
                piece: (!owned.is_whole(piece)).then(|| piece.clone()),
            });
            self.to[piece.rank].push(sent);
        }
    }
}

impl ByOwner<'_> {
    /// What owner `rank` gets, as the message carries it: a range as `[1, …, 1, values]`
    /// ([`flat`]), borrowed from the gradient's bytes.
    fn views(&self, rank: usize) -> Vec<Option<View<'_>>> {
        self.to[rank]
            .iter()
            .map(|sent| {
                let sent = sent.as_ref()?;
                let data = &self.data[sent.grad];
                let mut view = View::from(data);
                if let Some(piece) = &sent.piece {
                    let size = view.dtype.size();
                    view.bytes = &view.bytes[piece.range.start * size..piece.range.end * size];
                    view.dims = piece.dims(view.dims.len());
                }
                Some(view)
            })
            .collect()
    }
}

/// `[1, …, 1, values]`: `values` in a tensor of rank `D`, the shape a range is stepped in. An
/// elementwise optimizer step does not see the shape, so this equals stepping the whole tensor.
pub(crate) fn flat<const D: usize>(values: usize) -> [usize; D] {
    let mut dims = [1; D];
    dims[D - 1] = values;
    dims
}

/// A rank's gradients: this rank's own, or another's as received (of this rank's values).
enum Grads {
    Own(GradientsParams),
    Sent(std::vec::IntoIter<Option<TensorData>>),
}

/// Adds the gradients of each value this rank owns up in rank order, with the tensor additions
/// of Burn's `GradientsAccumulator` (`sum.add(next)`), so the sum has the one-process sum's
/// bits (an addition is elementwise: a range of the sum is the sum of the ranges).
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
        let owned = self.owners.param(index);
        let Some(piece) = self.owners.mine(index) else {
            return;
        };
        let whole = owned.is_whole(piece);
        let mut sum: Option<Tensor<D>> = None;
        for source in &mut self.sources {
            let grad = match source {
                Grads::Own(grads) => grads.remove::<D>(param.id).map(|grad| {
                    if whole {
                        grad
                    } else {
                        grad.reshape(flat::<D>(owned.elements())).narrow(
                            D - 1,
                            piece.range.start,
                            piece.range.len(),
                        )
                    }
                }),
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

/// The model an owner steps: each tensor this rank owns a range of replaced by that range
/// ([`flat`]), with the tensor's id, module path and training state, so that the
/// optimizer finds the parameter's group, rate and state as for the whole tensor. Tensors this
/// rank owns whole, or not at all, are left as they are.
struct ToPieces<'a> {
    owners: &'a Owners,
    index: usize,
}

impl ModuleMapper for ToPieces<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let index = self.index;
        self.index += 1;
        let owned = self.owners.param(index);
        let Some(piece) = self.owners.mine(index).filter(|p| !owned.is_whole(p)) else {
            return param;
        };
        let elements = owned.elements();
        param.map(|value| {
            // A new leaf with the tensor's training state, as Burn's optimizer restores one.
            let tracked = value.is_require_grad();
            let strategy = value.gradient_checkpointing_strategy();
            let piece = value.inner().reshape(flat::<D>(elements)).narrow(
                D - 1,
                piece.range.start,
                piece.range.len(),
            );
            let mut piece = Tensor::from_inner(piece);
            if let Some(strategy) = strategy {
                piece = piece.with_gradient_checkpointing_strategy(strategy);
            }
            if tracked { piece.require_grad() } else { piece }
        })
    }
}

/// The values this rank owns after its step, in visiting order: whole tensors as they are,
/// ranges as stepped.
struct OwnValues<'a> {
    owners: &'a Owners,
    index: usize,
    values: Vec<Option<TensorData>>,
}

impl ModuleVisitor for OwnValues<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.owners.mine(self.index).is_some() {
            self.values.push(Some(param.val().into_data()));
        }
        self.index += 1;
    }
}

/// Puts every tensor together again from its owners' values (the pieces' bytes one after the
/// other, in rank order), but those this rank stepped whole; a parameter keeps its device and
/// whether it takes a gradient.
struct SetValues<'a> {
    owners: &'a Owners,
    index: usize,
    sent: Vec<std::vec::IntoIter<Option<TensorData>>>,
}

impl ModuleMapper for SetValues<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let index = self.index;
        self.index += 1;
        let owned = self.owners.param(index);
        let mut values: Vec<TensorData> = owned
            .pieces
            .iter()
            .filter_map(|piece| self.sent[piece.rank].next().flatten())
            .collect();
        if values.is_empty() || self.owners.mine(index).is_some_and(|p| owned.is_whole(p)) {
            return param;
        }
        let data = match values.len() {
            1 => values.pop().expect("one"),
            _ => joined(owned, &values),
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

/// A tensor of `owned`'s shape from the values of its pieces, in order.
fn joined(owned: &Owned, values: &[TensorData]) -> TensorData {
    let dtype = values[0].dtype();
    let mut bytes = Vec::with_capacity(owned.elements() * dtype.size());
    for value in values {
        bytes.extend_from_slice(value.as_bytes());
    }
    TensorData::from_bytes_vec(bytes, owned.dims.clone(), dtype)
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

#[cfg(test)]
mod tests {
    use burn::module::{Module, ModuleVisitor, Param};
    use burn::nn::{Linear, LinearConfig};
    use burn::optim::decay::WeightDecayConfig;
    use burn::optim::momentum::MomentumConfig;
    use burn::optim::{
        AdamConfig, GradientsAccumulator, GradientsParams, ModuleOptimizer, SgdConfig,
    };
    use burn::tensor::activation::relu;
    use burn::tensor::{Bytes, Device, Int, Tensor, TensorData};
    use burn::train::ClassificationOutput;

    use super::{Parallel, Sharding};
    use crate::erased::ModelRef;
    use crate::parallel::threads::Threads;
    use crate::parallel::{Collective, ItemCodec, state};

    /// 4 → 6 → 16: the 6x16 matrix holds 96 of 142 values, so a cut of 2 or 3 ranks falls in it.
    #[derive(Module, Debug)]
    struct Net {
        a: Linear,
        b: Linear,
    }

    const LR: f64 = 0.05;

    fn net() -> Net {
        let device = Device::flex().autodiff();
        device.seed(7);
        Net {
            a: LinearConfig::new(4, 6).init(&device),
            b: LinearConfig::new(6, 16).init(&device),
        }
    }

    /// The gradients of batch `k`, from inputs of its own.
    fn grads(model: &Net, k: usize) -> GradientsParams {
        let device = Device::flex().autodiff();
        let values = (0..12)
            .map(|i| ((i * 7 + k * 13) % 11) as f32 / 5.0 - 1.0)
            .collect::<Vec<_>>();
        let x = Tensor::<2>::from_data(TensorData::new(values, [3, 4]), &device);
        let y = model.b.forward(relu(model.a.forward(x)));
        let loss = (y.clone() * y).mean();
        GradientsParams::from_grads(loss.backward(), model)
    }

    /// A step output to travel with the gradients (the metrics' side is tested elsewhere).
    fn item() -> ClassificationOutput {
        let device = Device::flex();
        ClassificationOutput {
            loss: Tensor::from_data([0.5f32], &device),
            output: Tensor::from_data([[1.0f32, 2.0]], &device),
            targets: Tensor::<1, Int>::from_data([1i64], &device),
        }
    }

    /// Every float parameter's bytes, in visiting order.
    #[derive(Default)]
    struct Values(Vec<Vec<u8>>);

    impl ModuleVisitor for Values {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push(param.val().into_data().as_bytes().to_vec());
        }
    }

    fn values(model: &Net) -> Vec<Vec<u8>> {
        let mut values = Values::default();
        model.visit(&mut values);
        values.0
    }

    /// A record's tensors (name, shape, bytes) and scalars, sorted.
    type Entries = (Vec<(String, Vec<usize>, Vec<u8>)>, Vec<(String, String)>);

    fn entries(bytes: Bytes) -> Entries {
        let reader = burn_pack::Reader::from_bytes(bytes).unwrap();
        let scalars = reader
            .scalars()
            .iter()
            .map(|(k, v)| (k.clone(), format!("{v:?}")))
            .collect();
        let mut tensors: Vec<_> = reader
            .into_tensors()
            .unwrap()
            .into_iter()
            .map(|t| {
                let (name, _, shape, _, bytes) = t.into_parts().unwrap();
                (name, shape.to_vec(), bytes.to_vec())
            })
            .collect();
        tensors.sort();
        (tensors, scalars)
    }

    /// `steps` optimizer steps of one process accumulating `ranks` batches each, from `start`.
    fn one_process(
        start: (Net, ModuleOptimizer),
        ranks: usize,
        steps: std::ops::Range<usize>,
    ) -> (Net, Bytes) {
        let (mut model, mut optimizer) = start;
        for step in steps {
            let mut sum = GradientsAccumulator::new();
            for rank in 0..ranks {
                sum.accumulate(&model, grads(&model, step * ranks + rank));
            }
            model = optimizer.step(LR, model, sum.grads());
        }
        (model, optimizer.into_bytes().unwrap())
    }

    /// What [`threads`] ends with: every rank's weights, the state rank 0 merged, and each
    /// rank's share of the values.
    type Ranks = (Vec<Vec<Vec<u8>>>, Bytes, Vec<(usize, usize)>);

    /// The same steps on `ranks` threads, each rank stepping the values `sharding` gives it.
    fn threads(
        start: (Net, ModuleOptimizer),
        ranks: usize,
        steps: std::ops::Range<usize>,
        sharding: Sharding,
    ) -> Ranks {
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = Threads::group(ranks)
                .into_iter()
                .map(|rank| {
                    let (mut model, optimizer) = (start.0.clone(), start.1.clone());
                    let steps = steps.clone();
                    scope.spawn(move || {
                        let group: &'static dyn Collective = Box::leak(Box::new(rank));
                        let mut parallel = Parallel::new(
                            group,
                            ItemCodec::<ClassificationOutput>::of(),
                            Device::flex(),
                            ModelRef::new(&model),
                            sharding,
                        );
                        let mut optimizer = state::keep_own(optimizer, parallel.owners()).unwrap();
                        for step in steps {
                            let own = grads(&model, step * ranks + group.rank());
                            let item = item();
                            let exchanged = parallel
                                .exchange(ModelRef::new(&model), Some((own, &item)), ranks, false)
                                .unwrap();
                            assert_eq!(exchanged.items.len(), ranks);
                            let pieces = parallel.pieces(model);
                            let stepped = optimizer.step(LR, pieces, exchanged.grads);
                            model = parallel.share_weights(stepped).unwrap();
                        }
                        let own = state::own_bytes(&optimizer).unwrap();
                        parallel.gather_state(&own).unwrap();
                        let merged = parallel.gathered_state().cloned();
                        (values(&model), merged, parallel.owners().share())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let merged = results[0].1.clone().expect("rank 0 merged the state");
        let shares = results.iter().map(|r| r.2).collect();
        (results.into_iter().map(|r| r.0).collect(), merged, shares)
    }

    fn adam() -> ModuleOptimizer {
        AdamConfig::new()
            .with_weight_decay(Some(WeightDecayConfig::new(1e-2)))
            .init()
    }

    fn sgd() -> ModuleOptimizer {
        SgdConfig::new()
            .with_momentum(Some(MomentumConfig::new().with_nesterov(true)))
            .init()
    }

    #[test]
    fn owners_of_ranges_step_what_one_process_accumulating_steps_bit_for_bit() {
        for (name, optimizer) in [("adam", adam as fn() -> ModuleOptimizer), ("sgd", sgd)] {
            for ranks in [2, 3] {
                let model = net();
                let (expected, state) = one_process((model.clone(), optimizer()), ranks, 0..3);
                let (weights, merged, shares) =
                    threads((model, optimizer()), ranks, 0..3, Sharding::Ranges);
                for (rank, weights) in weights.iter().enumerate() {
                    assert!(
                        *weights == values(&expected),
                        "{name}, {ranks} ranks: rank {rank}'s weights differ"
                    );
                }
                // Rank 0's checkpoint state is one process's, in its shapes.
                assert_eq!(entries(merged), entries(state), "{name}, {ranks} ranks");
                // The 6x16 matrix is split, and each rank keeps the state of about 1/N of the
                // 142 values (within one row of 16).
                for &(mine, all) in &shares {
                    assert_eq!(all, 142);
                    assert!(mine.abs_diff(all / ranks) <= 16, "{shares:?}");
                }
            }
        }
    }

    #[test]
    fn a_merged_state_split_again_by_ranges_continues_exactly() {
        for ranks in [2, 3] {
            let model = net();
            let (expected, _) = one_process((model.clone(), adam()), ranks, 0..3);
            // Two steps on the ranks; the third from rank 0's merged checkpoint state, split
            // again by range on each rank, as a resume does.
            let (first, merged, _) =
                threads((model.clone(), adam()), ranks, 0..2, Sharding::Ranges);
            let (twice, _) = one_process((model, adam()), ranks, 0..2);
            assert!(first[0] == values(&twice));
            let resumed = adam().from_bytes(merged).unwrap();
            let (weights, _, _) = threads((twice, resumed), ranks, 2..3, Sharding::Ranges);
            assert!(
                weights.iter().all(|w| *w == values(&expected)),
                "{ranks} ranks"
            );
        }
    }

    #[test]
    fn whole_tensor_owners_leave_the_dominant_tensor_on_one_rank() {
        let model = net();
        let (expected, state) = one_process((model.clone(), adam()), 2, 0..2);
        let (weights, merged, shares) = threads((model, adam()), 2, 0..2, Sharding::Tensors);
        assert!(weights.iter().all(|w| *w == values(&expected)));
        assert_eq!(entries(merged), entries(state));
        // The 6x16 matrix's 96 values, and the biases, on one rank.
        assert_eq!(shares, [(96, 142), (46, 142)]);
    }
}
