//! A model behind a vtable, so that code walking models is compiled once, here.
//!
//! A release build does not share generic instances between crates, and every `ModuleVisitor`
//! or `ModuleMapper` type that walks a model is instantiated in the crate naming the model for
//! each of the 27 tensor ranks and kinds a parameter may have (Burn's reparameterization glue
//! dispatches on all of them). The fit loop walks the model for checkpoint records, the
//! optimizer step, freezing, LoRA, gradient accumulation, clipping and the moving average: in
//! an experiment's crate those walks were most of its release build, whether or not the
//! experiment used the feature. [`AnyModule`] implements Burn's `Module` by handing each
//! parameter through one erased visitor or mapper to the model, so an experiment compiles those
//! two walks of its model and the rest, Burn's algorithms and ours, is compiled in this crate.
//!
//! Visiting or mapping through it meets the same parameters in the same order, with the same
//! module paths (`enter_module`/`exit_module` are forwarded): it adds no module level.

use std::any::Any;
use std::fmt::Debug;

use burn::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::module::{Devices, Flag, Module, ModuleMapper, ModuleVisitor, Param, ParameterValue};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::{Bool, Device, Int, Tensor};

/// A model of any type, as a Burn `Module`; [`AnyModule::into_inner`] gives it back.
///
/// Generic code calls the inherent methods below rather than `Module`'s own: those are generic
/// (default methods), so each would be compiled again in the caller's crate.
#[derive(Debug)]
pub struct AnyModule(Box<dyn DynModule>);

impl AnyModule {
    pub fn new<M: Module + 'static>(model: M) -> Self {
        Self(Box::new(model))
    }

    /// The model, as the type it was made from.
    ///
    /// # Panics
    /// When `M` is not that type: a bug in the caller, which holds the type.
    pub fn into_inner<M: Module + 'static>(self) -> M {
        *self
            .0
            .into_any()
            .downcast::<M>()
            .expect("AnyModule unwrapped as the type it was made from")
    }

    /// Burn's record of the parameters, as checkpoints and exports write it.
    pub fn record(self) -> ModuleRecord {
        self.into_record()
    }

    /// The parameters of `record` loaded in (`try_load_record`).
    pub fn load(self, record: ModuleRecord) -> Result<Self, RecordError> {
        self.try_load_record(record)
    }

    /// One step of `optimizer` with `grads` at rate `lr`: Burn's `TrainStep::optimize`.
    pub fn optimizer_step(
        self,
        optimizer: &mut ModuleOptimizer,
        lr: ModuleLearningRate,
        grads: GradientsParams,
    ) -> Self {
        optimizer.step(lr, self, grads)
    }
}

/// A borrowed model, for visits that need no copy of it. Like [`AnyModule`]'s methods,
/// [`ModelRef::visit`] is called from this crate's non-generic functions, which its visitor
/// types are compiled with.
#[derive(Clone, Copy)]
pub struct ModelRef<'a>(&'a dyn DynModule);

impl<'a> ModelRef<'a> {
    pub fn new<M: Module + 'static>(model: &'a M) -> Self {
        Self(model)
    }

    pub fn of(model: &'a AnyModule) -> Self {
        Self(&*model.0)
    }

    pub fn visit<V: ModuleVisitor>(self, visitor: &mut V) {
        self.0.visit_dyn(&mut FromDyn(visitor));
    }
}

/// The object-safe part of `Module` that `AnyModule` forwards to.
trait DynModule: Send + Debug {
    fn clone_dyn(&self) -> Box<dyn DynModule>;
    fn visit_dyn(&self, visitor: &mut dyn DynVisitor);
    fn map_dyn(self: Box<Self>, mapper: &mut dyn DynMapper) -> Box<dyn DynModule>;
    fn collect_devices_dyn(&self, devices: Devices) -> Devices;
    fn fork_dyn(self: Box<Self>, device: &Device) -> Box<dyn DynModule>;
    fn to_device_dyn(self: Box<Self>, device: &Device) -> Box<dyn DynModule>;
    fn train_dyn(self: Box<Self>) -> Box<dyn DynModule>;
    fn valid_dyn(&self) -> Box<dyn DynModule>;
    fn materialize_dyn(self: Box<Self>) -> Box<dyn DynModule>;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<M: Module + 'static> DynModule for M {
    fn clone_dyn(&self) -> Box<dyn DynModule> {
        Box::new(self.clone())
    }

    fn visit_dyn(&self, visitor: &mut dyn DynVisitor) {
        self.visit(&mut ToDyn(visitor));
    }

    fn map_dyn(self: Box<Self>, mapper: &mut dyn DynMapper) -> Box<dyn DynModule> {
        Box::new(self.map(&mut ToDynMapper(mapper)))
    }

    fn collect_devices_dyn(&self, devices: Devices) -> Devices {
        self.collect_devices(devices)
    }

    fn fork_dyn(self: Box<Self>, device: &Device) -> Box<dyn DynModule> {
        Box::new(self.fork(device))
    }

    fn to_device_dyn(self: Box<Self>, device: &Device) -> Box<dyn DynModule> {
        Box::new(self.to_device(device))
    }

    fn train_dyn(self: Box<Self>) -> Box<dyn DynModule> {
        Box::new(self.train())
    }

    fn valid_dyn(&self) -> Box<dyn DynModule> {
        Box::new(self.valid())
    }

    fn materialize_dyn(self: Box<Self>) -> Box<dyn DynModule> {
        Box::new(self.materialize())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

impl Clone for AnyModule {
    fn clone(&self) -> Self {
        Self(self.0.clone_dyn())
    }
}

impl Module for AnyModule {
    fn collect_devices(&self, devices: Devices) -> Devices {
        self.0.collect_devices_dyn(devices)
    }

    fn fork(self, device: &Device) -> Self {
        Self(self.0.fork_dyn(device))
    }

    fn to_device(self, device: &Device) -> Self {
        Self(self.0.to_device_dyn(device))
    }

    fn train(self) -> Self {
        Self(self.0.train_dyn())
    }

    fn valid(&self) -> Self {
        Self(self.0.valid_dyn())
    }

    fn materialize(self) -> Self {
        Self(self.0.materialize_dyn())
    }

    fn visit<V: ModuleVisitor>(&self, visitor: &mut V) {
        self.0.visit_dyn(&mut FromDyn(visitor));
    }

    fn map<Mp: ModuleMapper>(self, mapper: &mut Mp) -> Self {
        Self(self.0.map_dyn(&mut FromDynMapper(mapper)))
    }
}

/// A parameter whose rank is a value: `Param<Tensor<rank, K>>` behind `Any`.
struct Erased<P> {
    rank: usize,
    param: P,
}

type ErasedRef<'a> = Erased<&'a dyn Any>;
type ErasedBox = Erased<Box<dyn Any + Send>>;

trait DynVisitor {
    fn float(&mut self, param: ErasedRef<'_>);
    fn int(&mut self, param: ErasedRef<'_>);
    fn bool(&mut self, param: ErasedRef<'_>);
    fn flag(&mut self, flag: &Param<Flag>);
    fn enter(&mut self, name: &str, container_type: &str);
    fn exit(&mut self, name: &str, container_type: &str);
}

trait DynMapper {
    fn float(&mut self, param: ErasedBox) -> ErasedBox;
    fn int(&mut self, param: ErasedBox) -> ErasedBox;
    fn bool(&mut self, param: ErasedBox) -> ErasedBox;
    fn flag(&mut self, flag: Param<Flag>) -> Param<Flag>;
    fn enter(&mut self, name: &str, container_type: &str);
    fn exit(&mut self, name: &str, container_type: &str);
}

/// The model's side: each parameter, its rank made a value. The one visitor type an
/// experiment's crate instantiates for the walks of this module.
struct ToDyn<'a>(&'a mut dyn DynVisitor);

impl ModuleVisitor for ToDyn<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.float(Erased { rank: D, param });
    }

    fn visit_int<const D: usize>(&mut self, param: &Param<Tensor<D, Int>>) {
        self.0.int(Erased { rank: D, param });
    }

    fn visit_bool<const D: usize>(&mut self, param: &Param<Tensor<D, Bool>>) {
        self.0.bool(Erased { rank: D, param });
    }

    fn visit_flag(&mut self, flag: &Param<Flag>) {
        self.0.flag(flag);
    }

    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.0.enter(name, container_type);
    }

    fn exit_module(&mut self, name: &str, container_type: &str) {
        self.0.exit(name, container_type);
    }
}

/// [`ToDyn`] for mappers.
struct ToDynMapper<'a>(&'a mut dyn DynMapper);

impl ToDynMapper<'_> {
    fn back<P: 'static>(param: ErasedBox) -> P {
        *param
            .param
            .downcast()
            .expect("a mapper returns the parameter type it was given")
    }
}

impl ModuleMapper for ToDynMapper<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let param = Box::new(param);
        Self::back(self.0.float(Erased { rank: D, param }))
    }

    fn map_int<const D: usize>(&mut self, param: Param<Tensor<D, Int>>) -> Param<Tensor<D, Int>> {
        let param = Box::new(param);
        Self::back(self.0.int(Erased { rank: D, param }))
    }

    fn map_bool<const D: usize>(
        &mut self,
        param: Param<Tensor<D, Bool>>,
    ) -> Param<Tensor<D, Bool>> {
        let param = Box::new(param);
        Self::back(self.0.bool(Erased { rank: D, param }))
    }

    fn map_flag(&mut self, flag: Param<Flag>) -> Param<Flag> {
        self.0.flag(flag)
    }

    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.0.enter(name, container_type);
    }

    fn exit_module(&mut self, name: &str, container_type: &str) {
        self.0.exit(name, container_type);
    }
}

/// Calls `$body` with the const `$d` equal to `$rank`, for the ranks Burn's own rank dispatch
/// (its reparameterization glue) supports.
macro_rules! with_rank {
    ($rank:expr, $d:ident => $body:expr) => {
        match $rank {
            0 => with_rank!(@ 0, $d, $body),
            1 => with_rank!(@ 1, $d, $body),
            2 => with_rank!(@ 2, $d, $body),
            3 => with_rank!(@ 3, $d, $body),
            4 => with_rank!(@ 4, $d, $body),
            5 => with_rank!(@ 5, $d, $body),
            6 => with_rank!(@ 6, $d, $body),
            7 => with_rank!(@ 7, $d, $body),
            8 => with_rank!(@ 8, $d, $body),
            rank => panic!(
                "a parameter with {rank} dimensions: the training loop walks models whose parameters have at most 8, as Burn's parameter glue does"
            ),
        }
    };
    (@ $n:literal, $d:ident, $body:expr) => {{
        const $d: usize = $n;
        $body
    }};
}

/// This crate's side: the rank made a const again for a visitor compiled here.
struct FromDyn<'a, V>(&'a mut V);

fn as_param<T: ParameterValue + 'static>(param: &dyn Any) -> &Param<T> {
    param
        .downcast_ref()
        .expect("a parameter of the rank and kind it was sent as")
}

impl<V: ModuleVisitor> DynVisitor for FromDyn<'_, V> {
    fn float(&mut self, p: ErasedRef<'_>) {
        with_rank!(p.rank, D => self.0.visit_float(as_param::<Tensor<D>>(p.param)))
    }

    fn int(&mut self, p: ErasedRef<'_>) {
        with_rank!(p.rank, D => self.0.visit_int(as_param::<Tensor<D, Int>>(p.param)))
    }

    fn bool(&mut self, p: ErasedRef<'_>) {
        with_rank!(p.rank, D => self.0.visit_bool(as_param::<Tensor<D, Bool>>(p.param)))
    }

    fn flag(&mut self, flag: &Param<Flag>) {
        self.0.visit_flag(flag);
    }

    fn enter(&mut self, name: &str, container_type: &str) {
        self.0.enter_module(name, container_type);
    }

    fn exit(&mut self, name: &str, container_type: &str) {
        self.0.exit_module(name, container_type);
    }
}

/// [`FromDyn`] for mappers.
struct FromDynMapper<'a, M>(&'a mut M);

impl<M: ModuleMapper> FromDynMapper<'_, M> {
    /// `map` on the parameter in `erased`, of type `P`, put back behind `Any`.
    fn apply<P: Send + 'static>(erased: ErasedBox, map: impl FnOnce(P) -> P) -> ErasedBox {
        let param = *erased
            .param
            .downcast::<P>()
            .expect("a parameter of the rank and kind it was sent as");
        Erased {
            rank: erased.rank,
            param: Box::new(map(param)),
        }
    }
}

impl<M: ModuleMapper> DynMapper for FromDynMapper<'_, M> {
    fn float(&mut self, p: ErasedBox) -> ErasedBox {
        with_rank!(p.rank, D => Self::apply(p, |param: Param<Tensor<D>>| self.0.map_float(param)))
    }

    fn int(&mut self, p: ErasedBox) -> ErasedBox {
        with_rank!(p.rank, D => Self::apply(p, |param: Param<Tensor<D, Int>>| self.0.map_int(param)))
    }

    fn bool(&mut self, p: ErasedBox) -> ErasedBox {
        with_rank!(p.rank, D => Self::apply(p, |param: Param<Tensor<D, Bool>>| self.0.map_bool(param)))
    }

    fn flag(&mut self, flag: Param<Flag>) -> Param<Flag> {
        self.0.map_flag(flag)
    }

    fn enter(&mut self, name: &str, container_type: &str) {
        self.0.enter_module(name, container_type);
    }

    fn exit(&mut self, name: &str, container_type: &str) {
        self.0.exit_module(name, container_type);
    }
}

#[cfg(test)]
mod tests {
    use burn::module::{Lora, Module, ModuleMapper, ModuleVisitor, Param, ParamGroup, ParamId};
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::{Device, Int, Tensor};

    use super::{AnyModule, ModelRef};

    #[derive(Module, Debug)]
    struct Net {
        first: Linear,
        second: Linear,
        steps: Param<Tensor<1, Int>>,
    }

    /// A net whose `first` layer carries LoRA adapters: parameters nested in a
    /// reparameterization, which Burn walks through its own erased glue.
    fn net() -> Net {
        let device = Device::flex().autodiff();
        let net = Net {
            first: LinearConfig::new(3, 4).init(&device),
            second: LinearConfig::new(4, 2).init(&device),
            steps: Param::initialized(ParamId::new(), Tensor::from_ints([1, 2, 3], &device)),
        };
        net.apply_lora(Lora::new(2, 1.0).set_param_group(ParamGroup::from_path("first.weight")))
    }

    /// Every call a walk makes, with the module path, the parameter's id and rank.
    #[derive(Default)]
    struct Trace(Vec<String>);

    impl ModuleVisitor for Trace {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push(format!("float {D} {}", param.id));
        }

        fn visit_int<const D: usize>(&mut self, param: &Param<Tensor<D, Int>>) {
            self.0.push(format!("int {D} {}", param.id));
        }

        fn enter_module(&mut self, name: &str, container_type: &str) {
            self.0.push(format!("enter {name} {container_type}"));
        }

        fn exit_module(&mut self, name: &str, container_type: &str) {
            self.0.push(format!("exit {name} {container_type}"));
        }
    }

    fn trace(visit: impl FnOnce(&mut Trace)) -> Vec<String> {
        let mut trace = Trace::default();
        visit(&mut trace);
        trace.0
    }

    #[test]
    fn a_walk_through_the_vtable_meets_what_the_model_s_own_walk_meets() {
        let net = net();
        let direct = trace(|t| net.visit(t));
        assert!(
            direct.iter().any(|c| c.contains("Reparameterization")) && direct.len() > 12,
            "the model has nested parameters to meet: {direct:?}"
        );
        assert_eq!(trace(|t| ModelRef::new(&net).visit(t)), direct);
        assert_eq!(trace(|t| AnyModule::new(net.clone()).visit(t)), direct);
    }

    /// Doubles every float parameter and records the calls it receives.
    struct Double(Trace);

    impl ModuleMapper for Double {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            self.0.visit_float(&param);
            param.map(|tensor| tensor.mul_scalar(2.0))
        }

        fn map_int<const D: usize>(
            &mut self,
            param: Param<Tensor<D, Int>>,
        ) -> Param<Tensor<D, Int>> {
            self.0.visit_int(&param);
            param
        }

        fn enter_module(&mut self, name: &str, container_type: &str) {
            self.0.enter_module(name, container_type);
        }

        fn exit_module(&mut self, name: &str, container_type: &str) {
            self.0.exit_module(name, container_type);
        }
    }

    #[test]
    fn a_map_through_the_vtable_gives_the_model_s_own_map_bit_for_bit() {
        let net = net();
        let mut direct = Double(Trace::default());
        let mapped = net.clone().map(&mut direct);
        let mut erased = Double(Trace::default());
        let through: Net = AnyModule::new(net.clone()).map(&mut erased).into_inner();
        assert_eq!(erased.0.0, direct.0.0);
        let bytes = |net: Net| net.into_record().into_bytes().unwrap().to_vec();
        let (mapped, through, before) = (bytes(mapped), bytes(through), bytes(net));
        assert_eq!(through, mapped);
        assert_ne!(through, before, "the map changed the weights");
    }

    #[test]
    fn records_through_the_vtable_are_the_model_s_own() {
        let trained = net();
        let own = trained.clone().into_record().into_bytes().unwrap().to_vec();
        let erased = AnyModule::new(trained.clone()).record();
        assert_eq!(erased.into_bytes().unwrap().to_vec(), own);
        // Loaded back into a differently initialised net, through the vtable.
        let loaded: Net = AnyModule::new(net())
            .load(AnyModule::new(trained).record())
            .unwrap()
            .into_inner();
        assert_eq!(loaded.into_record().into_bytes().unwrap().to_vec(), own);
    }
}
