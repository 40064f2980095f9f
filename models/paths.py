"""Where smoldocs keeps files it makes: caches (converted models, indexes) and data (chats)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_ENV = "SMOLDOCS_CACHE"
DATA_ENV = "SMOLDOCS_DATA"


def cache_dir() -> Path:
    """Rebuildable files: converted GGUFs, indexes. $SMOLDOCS_CACHE overrides."""
    root = os.environ.get(CACHE_ENV)
    return Path(root) if root else Path(platformdirs.user_cache_dir("smoldocs"))


def data_dir() -> Path:
    """Files a user would miss: saved chats, exports. $SMOLDOCS_DATA overrides."""
    root = os.environ.get(DATA_ENV)
    return Path(root) if root else Path(platformdirs.user_data_dir("smoldocs"))
