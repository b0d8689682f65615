"""Puts stages/grpo/trainer on sys.path so ``import spade_trainer`` works from any working directory."""

import os
import sys

TRAINER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TRAINER_DIR not in sys.path:
    sys.path.insert(0, TRAINER_DIR)
