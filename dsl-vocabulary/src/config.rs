//! The config struct's own fields.

/// The fields of every `<Name>Config`, which a hyperparameter of `hparams` may not reuse
/// (the macro checks its list of config fields against this one).
pub const CONFIG_KEYS: &[&str] = &[
    "epochs",
    "batch_size",
    "shuffle",
    "workers",
    "lr",
    "optimizer",
    "optimizers",
    "lr_schedule",
    "grad_accumulation",
    "grad_clip",
    "early_stopping",
    "seed",
    "artifacts",
    "checkpoint",
    "run",
    "resume",
    "init_from",
    "freeze",
    "groups",
    "lora",
    "gradient_checkpointing",
    "ema",
    "ema_on",
    "device",
    "unfreeze",
    "engine",
    "strategy",
    "devices",
];
