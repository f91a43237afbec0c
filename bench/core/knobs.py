"""The settings (knobs) a cell may set, per family, and the combinations that make no sense.

Names follow the field and the tuning study (``bench/core/reference/mnist_cnn_tuning_4060ti.csv``). Each family
declares its settings classes (``bench.core.families.<name>``, made of ``bench.core.settings``); every list here is
derived from the registry, ``bench.core.families.FAMILIES``. ``check`` runs before any framework is imported; an
invalid combination becomes an ``unsupported`` record with the reason (a sweep never crashes on one).
"""

from __future__ import annotations

from typing import Any

from bench.core.families import FAMILIES, KINDS
from bench.core.settings import Settings, SettingsError, describe_allowed, valid_value
from bench.core.stacks import Stack

#: (engine, kind) -> its settings class; kind ``epochs`` (classic and tuning suites) or ``steps`` (paper). The epochs
#: classes first, in the families' order: the order of the knobs in ``DOCS`` and in the CSV's settings columns.
SETTINGS: dict[tuple[str, str], type[Settings]] = {
    (f.name, kind): cls for kind in KINDS for f in FAMILIES.values() if (cls := f.settings(kind)) is not None}
#: The epoch engines (classic and tuning suites): every family; the step-timed paper suite's are ``STEP_KNOBS``'.
EPOCH_ENGINES = tuple(e for e, kind in SETTINGS if kind == "epochs")


def settings_class(engine: str, kind: str = "epochs") -> type[Settings]:
    """The settings class of an engine (a family: ``FAMILIES``) and kind (``epochs`` or ``steps``).

    Raises:
        ValueError: unknown engine or kind.
    """
    try:
        return SETTINGS[(engine, kind)]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r} or kind {kind!r}") from None


#: Allowed values per knob and engine (from the settings classes); ``int``: any positive integer.
KNOBS: dict[str, dict[str, Any]] = {e: SETTINGS[(e, "epochs")].allowed() for e in EPOCH_ENGINES}
#: Values a knob takes when a cell does not set it (settings equal to these are dropped from variant names).
#: Keras' jit_compile has no entry: its default differs between Keras 2 (off) and Keras 3 ('auto').
DEFAULTS: dict[str, dict[str, Any]] = {e: SETTINGS[(e, "epochs")].defaults() for e in EPOCH_ENGINES}
#: What each knob means (``bench knobs`` prints it), in ``SETTINGS``' order.
#: A knob both kinds know keeps the epoch engines' text (the step engines' sync takes one value).
DOCS: dict[str, str] = {}
for _cls in SETTINGS.values():
    for _name, _text in _cls.help().items():
        DOCS.setdefault(_name, _text)
#: The knobs the step-timed engines (``paper`` suite) honour, per engine.
STEP_KNOBS = {e: tuple(SETTINGS[(e, "steps")].allowed()) for e, kind in SETTINGS if kind == "steps"}


def tf32_override(settings: dict[str, Any]) -> str | None:
    """The ``NVIDIA_TF32_OVERRIDE`` a cell's process gets: ``"0"`` (cuBLAS and cuDNN never use TF32, whatever a
    framework switch says) for ``tf32: off``, else None: no override, so the framework's own switch decides, as
    in the sources (``bench.core.settings.TF32_MODES``)."""
    return "0" if settings.get("tf32") == "off" else None


def check(stack: Stack, settings: dict[str, Any], kind: str = "epochs") -> str | None:
    """Why ``settings`` cannot run on ``stack`` (None when they can). Pure: imports no framework.

    ``kind``: the settings kind of the cell's scenario (``bench.run.scenarios``), ``epochs`` or ``steps``; a
    ``steps`` cell's engines honour only ``STEP_KNOBS`` (a family without a step engine, ``jax``, cannot run one).
    Then the family's own rules (``Settings.stack_problem``).
    """
    if kind == "steps" and stack.family not in STEP_KNOBS:
        return (f"the {stack.family} engine has no step-timed engine: the paper suite runs on "
                f"{', '.join(STEP_KNOBS)} stacks (its models are Keras and Hugging Face PyTorch models)")
    if kind == "steps":
        ignored = sorted(set(settings) - set(STEP_KNOBS[stack.family]))
        if ignored:
            return (f"setting(s) {', '.join(ignored)} not honoured by the step-timed {stack.family} engine "
                    f"(it takes: {', '.join(STEP_KNOBS[stack.family])})")
    cls = settings_class(stack.family, kind)
    reason = cls.problem(settings)
    if reason:
        return reason
    return cls(**settings).stack_problem(stack)


#: One-flag variants of the epoch suites' Keras cells beside their sources' defaults (``bench knobs``, ``bench list``):
#: knob=value -> what it is.
FIT_VARIANTS: dict[str, str] = {
    "jit_compile=false": "no XLA, as the 2017 scripts ran; Keras 3's default 'auto' uses XLA on JAX, and on "
                         "TensorFlow on a GPU; tf-keras optimizers compile their update with XLA on a GPU",
    "progress=bar": "Keras' progress bar, fit(verbose=1), instead of the 2017 notebooks' per-batch callback "
                    "(classic's default): the Keras 2.0.8 scripts' form, and the classic default before record "
                    "schema 4",
    "progress=none": "fit(verbose=0) without a per-batch callback: Keras' own batch path (asynchronous on JAX and "
                     "PyTorch), no per-step log read",
}


#: Knobs that change a workload's model -> the model they change (the epochs classes' ``model_knobs``): only a workload
#: that takes one (``Workload.keras_knobs``) may set it off its default.
MODEL_KNOBS = {k: text for e in EPOCH_ENGINES for k, text in SETTINGS[(e, "epochs")].model_knobs.items()}
_MODEL_KNOB_DEFAULTS = {k: SETTINGS[(e, "epochs")].defaults()[k]
                        for e in EPOCH_ENGINES for k in SETTINGS[(e, "epochs")].model_knobs}


def model_knob_problem(settings: dict[str, Any], workload: str, takes: tuple[str, ...]) -> str | None:
    """Why ``settings`` cannot run on ``workload``, whose model takes the model knobs ``takes`` (None when they can):
    a ``MODEL_KNOBS`` knob set off its default for a model that has no such choice. Pure: imports no framework."""
    for key in MODEL_KNOBS:
        if key in settings and key not in takes and settings[key] != _MODEL_KNOB_DEFAULTS[key]:
            return f"{key}={settings[key]!r} applies only to {MODEL_KNOBS[key]}, not to {workload}'s"
    return None


def parse_assignment(text: str) -> tuple[str, Any]:
    """``KNOB=VALUE`` from the command line: the knob and its value typed as the settings classes declare it
    (``true``/``false`` a bool, digits an int, else the text), checked against every engine that knows the knob.

    Raises:
        SettingsError: no ``=``, a knob no engine has, or a value no engine allows for it (the message lists them).
    """
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key:
        raise SettingsError(f"{text!r}: expected KNOB=VALUE (bench knobs lists them)")
    value: Any = {"true": True, "false": False}.get(raw.lower(), int(raw) if raw.isdigit() else raw)
    owners = [cls for cls in SETTINGS.values() if key in cls.allowed()]
    allowed = [cls.allowed()[key] for cls in owners]
    if not allowed:
        known = sorted({k for cls in SETTINGS.values() for k in cls.allowed()})
        raise SettingsError(f"unknown knob {key!r}; known: {', '.join(known)}")
    if not any(valid_value(a, value) for a in allowed) and not any(cls.is_default(key, value) for cls in owners):
        raise SettingsError(f"{key}={raw} is not valid; expected {describe_allowed(allowed[0])}")
    return key, value


def augmentation_problem(settings: Settings, workload: str, has_augmentation: bool) -> str | None:
    """Why a fit cell's ``augment`` setting cannot run (None when it can). Pure: imports no framework.

    The augmentation is its own host pipeline (one background worker, per image, as the source's
    ``fit_generator``), so it takes the data knobs at their defaults (the class's ``augment_data``): another
    pipeline is a variant of the un-augmented workload (``augment=false``).
    """
    augment = getattr(settings, "augment", None)
    if augment is True and not has_augmentation:
        return f"augment=true: {workload}'s source has no augmentation"
    if not (has_augmentation and augment is not False):
        return None
    changed = [f"{k}={getattr(settings, k)!r}" for k, v in settings.augment_data.items() if getattr(settings, k) != v]
    if changed:
        return (f"{workload} augments its images on the host, one worker as its source did; {', '.join(changed)} "
                "is another input pipeline: add augment=false")
    return None


def augment_in_effect(settings: Settings, has_augmentation: bool) -> bool:
    """Whether a cell trains on augmented images: the workload has a source augmentation and the cell did not
    turn it off (``augment`` unset or true)."""
    return has_augmentation and getattr(settings, "augment", None) is not False


def normalise(engine: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without the keys whose value is the engine's default."""
    defaults = DEFAULTS[engine]
    def is_default(k: str, v: Any) -> bool:
        return k in defaults and defaults[k] == v and type(defaults[k]) is type(v)

    return {k: v for k, v in settings.items() if not is_default(k, v)}


def variant_name(settings: dict[str, Any]) -> str:
    """A stable, file-name-safe variant id from settings: ``key=value`` pairs joined by ``+``."""
    if not settings:
        return "default"
    parts = []
    for key in sorted(settings):
        value = settings[key]
        text = str(value).lower() if isinstance(value, bool) else str(value)
        parts.append(f"{key}={text}")
    return "+".join(parts)
