#!/usr/bin/env bash
# Rendered by experiments/recipes.py for ms-swift 4.6.0
# --train_type -> --tuner_type: ms-swift 4.x renamed --train_type to --tuner_type; the old name aborts the run.
# --split_dataset_ratio 0.01: --split_dataset_ratio defaults to 0 since ms-swift 3.6, so without it there is no eval set, no eval loss, and --eval_steps does nothing. 0.01 was the default when the article was written.
# --model /work/main/.cache/models/full/Qwen2.5-7B-Instruct instead of Qwen/Qwen2.5-7B-Instruct
# --dataset: local files instead of the hub datasets
# --logging_steps 1: claims experiment best24-a
# --padding_free True: claims experiment best24-a
# --attn_impl sdpa: claims experiment best24-a
# --use_liger_kernel True: claims experiment best24-a
# --eval_steps 23: claims experiment best24-a
# --check_model False: set by the runner
# run in-process by experiments/launch.py --mem-cap-gib 24 --stop-after 46 --sdpa-padding-free (claims experiment on recipe bs16)
export HF_HUB_OFFLINE=1
export HF_DATASETS_OFFLINE=1
export MODELSCOPE_OFFLINE=1
python -m experiments.launch --mem-cap-gib 24 --stop-after 46 --sdpa-padding-free -- swift sft \
  --model /work/main/.cache/models/full/Qwen2.5-7B-Instruct \
  --tuner_type lora \
  --dataset '/work/main/.cache/data/h200-best24-a-20261130-103351/alpaca-gpt4-zh.json#500' '/work/main/.cache/data/h200-best24-a-20261130-103351/alpaca-gpt4-en.json#500' '/work/main/.cache/data/h200-best24-a-20261130-103351/self-cognition.jsonl#500' \
  --torch_dtype bfloat16 \
  --num_train_epochs 1 \
  --per_device_train_batch_size 16 \
  --per_device_eval_batch_size 1 \
  --learning_rate 1e-4 \
  --lora_rank 8 \
  --lora_alpha 32 \
  --target_modules all-linear \
  --gradient_accumulation_steps 1 \
  --eval_steps 23 \
  --save_steps 50 \
  --save_total_limit 2 \
  --logging_steps 1 \
  --max_length 2048 \
  --output_dir /work/main/results/h200/best24-a/20261130-103351 \
  --system 'You are a helpful assistant.' \
  --warmup_ratio 0.05 \
  --dataloader_num_workers 4 \
  --model_author swift \
  --model_name swift-robot \
  --add_version false \
  --padding_free true \
  --attn_impl sdpa \
  --use_liger_kernel true \
  --check_model false \
  --split_dataset_ratio 0.01
