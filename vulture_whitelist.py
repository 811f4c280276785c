"""Names the dead-code check (vulture, `make lint`) cannot see used: each is read by something outside the code it
reads. Add a name here only with the reader it has.
"""
# ruff: noqa
from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# fields of typed values read through dataclasses.asdict (JSON output, table rows, the report's CSVs)
time_source, scheduled, tokens_per_s_error_pct, profiled_busy_s, profiled_tokens, overhead_s  # estimate
optimizer_s, live_peak_gib, headroom_gib, tokens_per_micro_batch  # the planner's PlanRow
loss_dev, band_step, rule_text, base_n, test_n, failed_other  # judge
# the answer's view (analysis.judge.answer.view): read through dataclasses.asdict (JSON, CSV) and by name in the
# fields' metadata (band, note), analysis.present.view_render
epoch_low_s, epoch_high_s, steady_ms, steady_low_ms, steady_high_ms, x_seed_low, x_seed_high, x_seed_rounds, seed_bound, seed_basis
# the other typed views (analysis.judge.answer.run_tables, seed_table, view; analysis.measure.repeats): read through
# dataclasses.asdict by analysis.present.view_render.to_frame (the tables' columns, CSV and JSON)
tokens_per_s_per_gpu, comm_ms_per_step, gpm_busy_ms_per_step, gpm_host_ms_per_step, speedup_basis, speedup_hosts
measured_over_published, host_python_ns, host_dispatch_us, host_lora_ms, est_full_tokens_per_s
est_full_tokens_per_s_low, est_full_tokens_per_s_high, tokens_per_s_from, tokens_per_s_to, run_from, run_to
host_epoch_s, load_low_s, load_high_s, probe_loop_ns_low, probe_loop_ns_high, run_names, launcher_x_plain
ms_ci95_high, ms_ci95_low, ms_per_step_of_each_run, probe_after, probe_before, spread_pct, step_time_ms
peak_tflops, comm_frac, gpm_sm_util_pct, gpm_tensor_util_pct, main_package, token_acc  # measure, parse
# the report sections' typed views (issue 46: analysis.measure.utilisation_view, analysis.estimate.estimate_views,
# analysis.judge.audit.claim_views and frames, run_tables' SpeedPoint): read through dataclasses.asdict by
# view_render.to_frame, the fields' names listed as columns (utilisation_view.SHOWN, MAIN, ENERGY) or read by the
# figures (analysis.present.plots)
nvml_samples, util_mean_pct, power_mean_w, power_median_w, power_capped_pct, sm_clock_mean_mhz, sm_clock_median_mhz
tokens_steady, util_gpu_pct, sm_clock_mhz, steady_busy_frac, same_steps_gpu_ratio, same_steps_host_ratio
ms_lo, ms_hi, tok_lo, tok_hi, english, data_in_this_report, steady_x_seed, steady_x_seed_hosts, loss_counts
model_tokens_per_s, model_ratio, check  # analysis.estimate.estimate_views.CarriedRow
obtained  # analysis.judge.answer.view.ClassRow: the report's first screen picks it by name (answer.FIRST_SCREEN_CLASSES)
gpu_busy_s, median_unprofiled_step_s, top_op

# what a sweep recorded, kept beside the figures the nccl_env verdict reads (analysis.parse.bench,
# analysis.measure.interconnect)
time_us_without, time_us_with, busbw_without, busbw_with, algbw_gbs, topology

# hooks and attributes other libraries call or read
__getattr__  # module-level lazy attributes (analysis/present/report, experiments/offline/dummy)
_.exclude_input, _.exclude_input_prompt, _.exclude_output_prompt  # nbconvert's exporter options
_.handle_starttag, _.handle_data, _.handle_endtag  # html.parser.HTMLParser's hooks (tests/test_answer_view.py)
_.should_log  # transformers' TrainerControl
_.on_evaluate  # transformers' TrainerCallback hook (experiments/record/gpm.py writes its lines there)
_._prepare_model_tokenizer, _._save_val_dataset, val_dataset  # ms-swift's SwiftSft, overridden
_.load_tiktoken_bpe, _.ignore_merges, _.normalizer, _.pre_tokenizer, _.post_processor  # tokenizers' objects
_.dataloader_num_workers, _.dataloader_persistent_workers, _.dataloader_prefetch_factor  # transformers' args
_._train_batch_size, _.accelerator  # transformers' Trainer
_.fx_graph_cache, _.enable_autograd_cache  # torch._inductor / torch._functorch config
_.found_inf  # torch's GradScaler state
_.sample1, _.sample2  # NVML's GPM structure (ctypes)

# names of the run-folder contract and of the command line that no module reads
RUNALL_LOG  # experiments/base/runfiles.py: the runner's console output, read by people and device-call scripts
SWIFT_MODEL_ARGS  # experiments/offline/dummy.py: the flags a user passes to swift for the dummy model

# stand-ins of NVML and CUPTI in tests: the real API's names
nvmlClocksThrottleReasonGpuIdle, nvmlClocksThrottleReasonSwPowerCap, nvmlClocksThrottleReasonHwSlowdown
nvmlClocksThrottleReasonAll, buffer, valid, lib_
_.nvmlDeviceGetPciInfo, _.nvmlDeviceGetMaxClockInfo, _.nvmlDeviceGetPersistenceMode
pytestmark  # pytest reads it

# TypedDict keys read as strings (s["head_dim"]): experiments.base.hardware.ModelShapes
head_dim

# fields of typed quotes read by analysis.judge.audit.result.quoted (by name: a flag, or a number a verdict quotes)
banded, seed_mean, seeds_at_step, ranged, seed_tokens_source  # judge.band.LossCheck, judge.audit.quote

# rule functions, called through the registry their @rulespec.kind decorator fills (analysis.judge.audit.rules.RULES)
rule_memory_loss_pair, rule_capacity_explains_batch, rule_min_memory, rule_fits  # judge.audit.rules_memory
rule_speedup, rule_tradeoff, rule_recipe, rule_target_speedup, rule_class_best  # judge.audit.rules_speed
rule_capped_fit, rule_flags, rule_supported, rule_bound, rule_seed_spread  # judge.audit.rules_card, rules_tooling
rule_scaling, rule_nccl_env, rule_resume_time  # judge.audit.rules_cluster
RULE_MODULES  # judge.audit.rules: imported so that each registers its kinds

# run-folder keys of experiments/base/runfolder.py that the writers set as keyword arguments (write_status(started=...))
# and the readers' TypedDicts name (tests/test_runfolder_contract.py checks those against the contract)
STARTED, FINISHED, SAMPLES

# data/hardware.yaml fields GpuClass types so that the file's every field is checked (experiments/base/hardware.py);
# people read them in the file, the code does not
memory_type, board_power_source

# issue 44's anchor runs (experiments/anchors/tt_run.py): names torchtune reads, from the config (_component_ paths) or
# as the recipe's hooks and its SFTDataset's attributes; the datasets stand-in's names, imported by torchtune
no_checkpointer, local_alpaca, StepLogger, log_config, load_checkpoint, save_checkpoint  # torchtune's recipe
_.fused, _._checkpointer, _._model_transform, _._data, _._prepare_sample  # torchtune config / SFTDataset attributes
load_dataset, split_dataset_by_node  # experiments/anchors/shim/datasets: torchtune imports them
published_metric  # analysis/parse/anchor_run.py AnchorRun: printed through asdict
