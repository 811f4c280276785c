#!/usr/bin/env bash
# Rendered by experiments/recipes.py for ms-swift 4.6.0
# --train_type -> --tuner_type: ms-swift 4.x renamed --train_type to --tuner_type; the old name aborts the run.
# --split_dataset_ratio 0.01: --split_dataset_ratio defaults to 0 since ms-swift 3.6, so without it there is no eval set, no eval loss, and --eval_steps does nothing. 0.01 was the default when the article was written.
# --model /work/main/.cache/models/full/Qwen2.5-7B-Instruct instead of Qwen/Qwen2.5-7B-Instruct
# --dataset: local files instead of the hub datasets
# --max_steps 2: a cut run
# --logging_steps 1: claims experiment lcap24-len2048-bs1
# --gradient_accumulation_steps 1: claims experiment lcap24-len2048-bs1
# --per_device_train_batch_size 1: claims experiment lcap24-len2048-bs1
# --check_model False: set by the runner
# run in-process by experiments/launch.py --mem-cap-gib 24 --longest-first --pad-to 2048 (claims experiment on recipe seed)
export HF_HUB_OFFLINE=1
export HF_DATASETS_OFFLINE=1
export MODELSCOPE_OFFLINE=1
python -m experiments.launch --mem-cap-gib 24 --longest-first --pad-to 2048 -- swift sft \
  --model /work/main/.cache/models/full/Qwen2.5-7B-Instruct \
  --tuner_type lora \
  --dataset '/work/main/.cache/data/h200-lcap24-len2048-bs1-20261130-124011/alpaca-gpt4-zh.json#500' '/work/main/.cache/data/h200-lcap24-len2048-bs1-20261130-124011/alpaca-gpt4-en.json#500' '/work/main/.cache/data/h200-lcap24-len2048-bs1-20261130-124011/self-cognition.jsonl#500' \
  --torch_dtype bfloat16 \
  --num_train_epochs 1 \
  --per_device_train_batch_size 1 \
  --per_device_eval_batch_size 1 \
  --learning_rate 1e-4 \
  --lora_rank 8 \
  --lora_alpha 32 \
  --target_modules all-linear \
  --gradient_accumulation_steps 1 \
  --eval_steps 50 \
  --save_steps 50 \
  --save_total_limit 2 \
  --logging_steps 1 \
  --max_length 2048 \
  --output_dir /work/main/results/h200/lcap24-len2048-bs1/20261130-124011 \
  --system 'You are a helpful assistant.' \
  --warmup_ratio 0.05 \
  --dataloader_num_workers 4 \
  --model_author swift \
  --model_name swift-robot \
  --add_version false \
  --max_steps 2 \
  --check_model false \
  --split_dataset_ratio 0.01
