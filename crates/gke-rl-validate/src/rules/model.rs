//! The model against its parallelism and its GPUs, from the model catalogue: attention heads
//! and KV heads split by Megatron's and vLLM's tensor parallelism, layers by pipeline
//! parallelism, experts by expert parallelism, and an estimate of each GPU's training memory.

use super::nemo::Job;
use super::*;
use gke_rl::knowledge::{self, ModelFacts};

/// Every rule this module runs.
const MODEL_RULES: [&Rule; 6] = [&MODEL_UNKNOWN, &TP_HEADS, &VLLM_TP_HEADS, &PP_LAYERS, &EXPERT_PARALLEL, &GPU_MEMORY];

/// Bytes per parameter that every model-parallel rank holds in Megatron with bf16 weights: the
/// weights (2) and fp32 main gradients (4).
const WEIGHT_AND_GRADIENT_BYTES: u64 = 6;
/// Adam's fp32 master weights and two moments (12 bytes per parameter), which the
/// distributed optimizer shards over the data-parallel ranks.
const OPTIMIZER_BYTES: u64 = 12;

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    for view in &views.jobs {
        let Some(job) = Job::new(view, facts) else {
            for rule in MODEL_RULES {
                sink.skip(rule, "the job script has no NeMo-RL launch line", "launch NeMo-RL's GRPO launcher in run_nemo_rl.sh");
            }
            continue;
        };
        let Some((name, at)) = job.string("policy.model_name") else {
            for rule in MODEL_RULES {
                sink.skip(rule, "no policy.model_name", "set policy.model_name in the job script");
            }
            continue;
        };
        sink.ran(&MODEL_UNKNOWN);
        let Some(model) = knowledge::model(name) else {
            let skipped =
                ["tp-heads", "vllm-tp-heads", "pp-layers", "expert-parallel", "gpu-memory", "lustre-too-small", "checkpoint-save-time"];
            sink.emit(
                &MODEL_UNKNOWN,
                job.view.file,
                at.unwrap_or(job.launch_at()),
                format!("`{name}` is not in gke-rl's model catalogue: {} were not checked", skipped.join(", ")),
                "`gke-rl models` lists the models gke-rl knows; a model whose config.json can be cited can be added",
            );
            for rule in &MODEL_RULES[1..] {
                sink.skip(rule, format!("{name} is not in the model catalogue"), "use a model `gke-rl models` lists");
            }
            continue;
        };
        heads(&job, model, sink);
        layers_and_experts(&job, model, sink);
        memory(&job, model, facts, sink);
    }
}

/// A parallel size, 1 when unset.
fn size(job: &Job<'_>, key: &str) -> (i64, (u32, u32)) {
    let (n, at) = job.int(key).map_or((1, None), |(n, at)| (n.max(1), at));
    (n, at.unwrap_or(job.launch_at()))
}

/// The tensor-parallel sizes that split `model`'s heads, up to `most`.
fn dividing(model: &ModelFacts, most: i64, fits: Fits) -> String {
    let sizes: Vec<String> = (1..=most).filter(|tp| fits(model, *tp)).map(|tp| tp.to_string()).collect();
    sizes.join(", ")
}

/// Whether a tensor-parallel size splits a model's heads.
type Fits = fn(&ModelFacts, i64) -> bool;

fn megatron_fits(model: &ModelFacts, tp: i64) -> bool {
    let tp = tp as u64;
    model.attention_heads.is_multiple_of(tp) && model.kv_heads.is_multiple_of(tp)
}

/// vLLM shards the query heads and either shards the KV heads or, with more ranks than KV
/// heads, replicates each over a whole number of ranks.
fn vllm_fits(model: &ModelFacts, tp: i64) -> bool {
    let (tp, kv) = (tp as u64, model.kv_heads);
    model.attention_heads.is_multiple_of(tp) && (kv.is_multiple_of(tp) || tp.is_multiple_of(kv))
}

fn heads(job: &Job<'_>, model: &ModelFacts, sink: &mut Sink) {
    let megatron = job.boolean("policy.megatron_cfg.enabled") == Some(true);
    let policy = if megatron { "policy.megatron_cfg.tensor_model_parallel_size" } else { "policy.dtensor_cfg.tensor_parallel_size" };
    let checks: [(&Rule, &str, Fits, &str); 2] = [
        (&TP_HEADS, policy, megatron_fits, "the policy cannot be sharded"),
        (&VLLM_TP_HEADS, "policy.generation.vllm_cfg.tensor_parallel_size", vllm_fits, "vLLM refuses to load it"),
    ];
    let gpus = job.int("cluster.gpus_per_node").map_or(8, |(n, _)| n.max(1));
    for (rule, key, fits, consequence) in checks {
        let (tp, at) = size(job, key);
        sink.ran(rule);
        if !fits(model, tp) {
            sink.emit(
                rule,
                job.view.file,
                at,
                format!(
                    "{key} {tp} does not split {}'s {} attention heads and {} KV heads: {consequence}",
                    model.name, model.attention_heads, model.kv_heads
                ),
                format!("set {key} to one of {}", dividing(model, gpus, fits)),
            );
        }
    }
}

fn layers_and_experts(job: &Job<'_>, model: &ModelFacts, sink: &mut Sink) {
    let file = job.view.file;
    if job.boolean("policy.megatron_cfg.enabled") != Some(true) {
        sink.ran(&PP_LAYERS);
        sink.ran(&EXPERT_PARALLEL);
        return;
    }
    let (pp, at) = size(job, "policy.megatron_cfg.pipeline_model_parallel_size");
    sink.ran(&PP_LAYERS);
    if !model.layers.is_multiple_of(pp as u64) {
        sink.emit(
            &PP_LAYERS,
            file,
            at,
            format!("pipeline parallelism {pp} does not split {}'s {} layers evenly", model.name, model.layers),
            format!("use a pipeline size that divides {}", model.layers),
        );
    }
    let (ep, at) = size(job, "policy.megatron_cfg.expert_model_parallel_size");
    sink.ran(&EXPERT_PARALLEL);
    if ep == 1 {
        return;
    }
    let problem = if model.experts == 0 {
        Some(format!("expert parallelism {ep} on {}, a dense model with no experts", model.name))
    } else if !model.experts.is_multiple_of(ep as u64) {
        Some(format!("expert parallelism {ep} does not divide {}'s {} experts", model.name, model.experts))
    } else {
        let world = job.int("cluster.num_nodes").zip(job.int("cluster.gpus_per_node")).map(|((n, _), (g, _))| n * g);
        let (tp, _) = size(job, "policy.megatron_cfg.tensor_model_parallel_size");
        world.filter(|world| world % (tp * pp) != 0 || (world / (tp * pp)) % ep != 0).map(|world| {
            format!("expert parallelism {ep} does not divide the {} ranks left by TP {tp} × PP {pp} of {world} GPUs", world / (tp * pp))
        })
    };
    if let Some(problem) = problem {
        sink.emit(
            &EXPERT_PARALLEL,
            file,
            at,
            problem,
            "set policy.megatron_cfg.expert_model_parallel_size to 1 or a size that divides both",
        );
    }
}

fn memory(job: &Job<'_>, model: &ModelFacts, facts: &Facts, sink: &mut Sink) {
    let machine = facts.machine_type_name();
    let Some((family, memory_gb)) = knowledge::gpu_family(machine).and_then(|f| Some((f, f.gpu_memory_gb?))) else {
        sink.skip(&GPU_MEMORY, format!("the GPU memory of {machine} is unknown"), "use a machine type of a known GPU family");
        return;
    };
    let Some(((nodes, _), (gpus, _))) = job.int("cluster.num_nodes").zip(job.int("cluster.gpus_per_node")) else {
        sink.skip(&GPU_MEMORY, "no cluster.num_nodes or cluster.gpus_per_node", "set them in the job script");
        return;
    };
    let world = (nodes * gpus).max(1) as u64;
    let megatron = job.boolean("policy.megatron_cfg.enabled") == Some(true);
    let (bytes, how, at) = if megatron {
        let (tp, at) = size(job, "policy.megatron_cfg.tensor_model_parallel_size");
        let (pp, _) = size(job, "policy.megatron_cfg.pipeline_model_parallel_size");
        let (cp, _) = size(job, "policy.megatron_cfg.context_parallel_size");
        let model_parallel = (tp * pp) as u64;
        let shard = model.parameters.div_ceil(model_parallel);
        let dp = (world / (model_parallel * cp as u64)).max(1);
        let optimizer = if job.boolean("policy.megatron_cfg.optimizer.optimizer_cpu_offload") == Some(true) {
            0
        } else if job.boolean("policy.megatron_cfg.optimizer.use_distributed_optimizer") == Some(true) {
            (shard * OPTIMIZER_BYTES).div_ceil(dp)
        } else {
            shard * OPTIMIZER_BYTES
        };
        (shard * WEIGHT_AND_GRADIENT_BYTES + optimizer, format!("TP {tp} × PP {pp}, the optimizer over {dp} data-parallel ranks"), at)
    } else {
        // DTensor (FSDP2) shards weights, gradients and optimizer state over every GPU.
        let bytes = (model.parameters * (WEIGHT_AND_GRADIENT_BYTES + OPTIMIZER_BYTES)).div_ceil(world);
        (bytes, format!("sharded over {world} GPUs"), job.launch_at())
    };
    sink.ran(&GPU_MEMORY);
    let capacity = memory_gb * 1_000_000_000;
    if bytes > capacity {
        sink.emit(
            &GPU_MEMORY,
            job.view.file,
            at,
            format!(
                "training {} needs about {} GB per GPU for weights, gradients and Adam state ({how}), more than the {} GB of an {} ({}), before activations and vLLM's share",
                model.name,
                gke_rl::yaml::decimal::fixed(bytes as f64 / 1e9, 0),
                memory_gb,
                family.gpu,
                family.name
            ),
            "raise tensor or pipeline parallelism, enable the distributed optimizer, or use more nodes",
        );
    }
}
