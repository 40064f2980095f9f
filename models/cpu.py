"""Which of llama.cpp's CPU weight layouts are safe to use on this machine.

llama.cpp may move quantized weights into "extra" buffers at load: repacked for AVX2/AVX-512, or tiled for
Intel AMX. On a virtual machine that reports AMX but does not let a process use its tile registers (seen on a
2-core Xeon VM: SIGILL or SIGSEGV in the first matrix product, for the Q4_1 chat model and a Q8_0 MiniLM
alike; f16 weights were unaffected), every load would crash. So where llama.cpp's build reports AMX, weights
stay in the plain layout, which computes the same results. `SMOLDOCS_WEIGHT_REPACK=on` keeps the extra
buffers (a machine whose AMX works), `off` never uses them.

llama_cpp.Llama takes no argument for this, so `use_safe_weight_buffers()` wraps llama.cpp's default model
parameters once per process, before any model is loaded: every Llama made afterwards, ours or a baseline's,
gets the same choice.
"""

from __future__ import annotations

import os

ENV = "SMOLDOCS_WEIGHT_REPACK"
_applied: bool | None = None  # the choice made for this process, once made


def extra_buffers_wanted(system_info: str, setting: str | None) -> bool:
    """Whether llama.cpp may use its extra weight buffers, given its system info line and the env setting."""
    value = (setting or "auto").strip().lower()
    if value in ("on", "1", "yes"):
        return True
    if value in ("off", "0", "no"):
        return False
    if value != "auto":
        from models.errors import BadSetting

        raise BadSetting(f"{ENV}={setting!r} is not a setting: use on, off or auto")
    return "AMX_INT8 = 1" not in system_info


def use_safe_weight_buffers() -> bool:
    """Apply the choice for this process (once) and return whether extra buffers are in use."""
    global _applied
    if _applied is not None:
        return _applied
    import llama_cpp.llama_cpp as lib

    wanted = extra_buffers_wanted(lib.llama_print_system_info().decode("utf-8", "replace"), os.environ.get(ENV))
    if not wanted:
        defaults = lib.llama_model_default_params

        def plain_layout_defaults():
            params = defaults()
            params.use_extra_bufts = False
            return params

        lib.llama_model_default_params = plain_layout_defaults
    _applied = wanted
    return wanted
