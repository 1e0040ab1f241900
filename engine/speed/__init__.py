"""How long a fine-tuning run takes (training.py), what offload, communication and a second node cost in it
(costs.py), and how fast a model generates (inference.py). Calibration: engine/catalog/speed.toml, checked
against published throughput by bench/speed_accuracy.py. Pure and synchronous."""

from engine.speed.costs import (
    CommunicationCost,
    MultiNodeCost,
    OffloadCost,
    communication_cost,
    multi_node_cost,
    offload_cost,
)
from engine.speed.flops import (
    attention_flops_per_token,
    dense_flops_per_token,
    matmul_params,
    training_flops_per_token,
    utilisation,
)
from engine.speed.hardware import (
    calibration,
    gpu_class,
    gpus_per_node,
    intra_node_gbs,
    link_kind,
    network_gbs,
    node_network_gbs,
    pcie_gbs,
    resolve_gpu,
)
from engine.speed.inference import (
    InferenceSpeed,
    attention_width,
    bandwidth_efficiency,
    inference_speed,
    kv_bytes_per_token,
    scaling,
    weight_params_read,
)
from engine.speed.training import (
    TOKENS_100M,
    StepTime,
    TrainingTime,
    default_accumulation,
    seconds_per_token,
    step_time,
    trainable_params,
    training_time,
)

__all__ = [
    "TOKENS_100M", "CommunicationCost", "InferenceSpeed", "MultiNodeCost", "OffloadCost", "StepTime",
    "TrainingTime", "attention_flops_per_token", "attention_width", "bandwidth_efficiency", "calibration",
    "communication_cost", "default_accumulation", "dense_flops_per_token", "gpu_class", "gpus_per_node",
    "inference_speed", "intra_node_gbs", "kv_bytes_per_token", "link_kind",
    "matmul_params", "multi_node_cost", "network_gbs", "node_network_gbs", "offload_cost", "pcie_gbs",
    "resolve_gpu", "scaling", "seconds_per_token", "step_time", "trainable_params", "training_flops_per_token",
    "training_time", "utilisation", "weight_params_read",
]
