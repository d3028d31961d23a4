#!/bin/bash
# Simulated mod (stand-in for the launcher's mods/step-3.7-flash): the real one patches vLLM for the
# model; the stand-in has nothing to patch and says so.
echo "[step-3.7-flash] patches applied"
