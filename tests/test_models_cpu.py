"""models.cpu: llama.cpp's extra weight buffers are left out where its build reports AMX (a VM's AMX faults)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from models.cpu import ENV, extra_buffers_wanted
from models.errors import BadSetting

AMX = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 |"
NO_AMX = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | REPACK = 1 |"


@pytest.mark.parametrize("info, setting, wanted", [
    (AMX, None, False), (NO_AMX, None, True), (AMX, "auto", False),
    (AMX, "on", True), (NO_AMX, "off", False), (AMX, " ON ", True), (NO_AMX, "0", False),
])
def test_extra_buffers_follow_amx_unless_the_setting_says(info, setting, wanted):
    assert extra_buffers_wanted(info, setting) is wanted


def test_a_bad_setting_is_one_line_naming_the_choices():
    with pytest.raises(BadSetting, match="SMOLDOCS_WEIGHT_REPACK='maybe' is not a setting: use on, off or auto"):
        extra_buffers_wanted(AMX, "maybe")


CHILD = """
import llama_cpp.llama_cpp as lib
from models.llama_cpp.chat import load_chat_model
from models.cpu import use_safe_weight_buffers
from models.protocols import GenerationOptions
model = load_chat_model()
reply = "".join(model.stream([{"role": "user", "content": "Say hi. " * 100}], GenerationOptions(max_tokens=4)))
assert reply.strip(), "no text"
info = lib.llama_print_system_info().decode()
print(use_safe_weight_buffers(), "AMX_INT8 = 1" in info, lib.llama_model_default_params().use_extra_bufts)
"""


@pytest.mark.real
def test_the_real_model_loads_and_answers_with_the_layout_chosen_for_this_cpu():
    # A child process: the choice is made once per process, and a wrong one crashes it rather than the test run.
    env = {k: v for k, v in os.environ.items() if k != ENV}  # the automatic choice, whatever the caller set
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    applied, amx, default = done.stdout.split()[-3:]
    assert applied == str(amx == "False") and default == applied
