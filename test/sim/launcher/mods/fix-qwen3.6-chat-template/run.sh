#!/bin/bash
# Simulated mod (Tandem's own stand-in for the launcher's mods/fix-qwen3.6-chat-template): like the
# real one it copies its chat template into the container's working directory, where the recipe's
# `--chat-template fixed_chat_template.jinja` finds it.
set -e
cp chat_template.jinja "$WORKSPACE_DIR/fixed_chat_template.jinja"
echo "=======> to apply chat template, use --chat-template fixed_chat_template.jinja"
