"""jetspark.processors exports its factories exactly once, and no implementation class."""

from __future__ import annotations

import inspect
import pickle
import types

import cloudpickle

import jetspark.processors as P
from jetspark.core import AbstractProcessor, ProcessorSupplier


def test_all_is_exactly_the_public_namespace() -> None:
    public = {
        name
        for name, value in vars(P).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(P.__all__)
    assert len(P.__all__) == len(set(P.__all__))


def test_no_processor_class_is_public() -> None:
    for name in P.__all__:
        value = getattr(P, name)
        assert not (inspect.isclass(value) and issubclass(value, AbstractProcessor)), name


def all_suppliers() -> list[ProcessorSupplier]:
    return [
        P.from_iterable([1]),
        P.generator_stream(count=1),
        P.map(str),
        P.filter(bool),
        P.flat_map(list),
        P.fused(P.Chain().map(str)),
        P.accumulate_by_key(str, P.counting()),
        P.combine_by_key(P.counting()),
        P.collect(),
        P.logger(),
        P.noop(),
        P.accumulate_by_key(str, P.averaging(len), steps=P.Chain().filter(bool)),
        P.insert_watermarks(len, allowed_lag=2, idle_timeout_millis=10),
        P.accumulate_by_frame(str, len, P.WindowPolicy.sliding(10, 5), P.counting()),
        P.combine_to_sliding_window(P.WindowPolicy.tumbling(10), P.to_list()),
        P.aggregate_to_sliding_window(str, len, P.WindowPolicy.tumbling(10), P.top_n(3)),
        P.aggregate_to_session_window(str, len, 5, P.summing(len)),
        P.hash_join(str, str, outer=True),
        P.window_join(str, str, len, len, P.WindowPolicy.tumbling(10)),
        P.sort(key=len),
        P.distinct(),
        P.print(),
        P.read_text(__file__),
        P.read_jsonl(__file__, errors="skip"),
        P.read_csv(__file__, types={0: int}, header=False),
        P.directory_stream(".", format=P.csv_format(types={"a": int}), errors="dead_letter"),
        P.write_jsonl("out", partition_by="k"),
        P.write_csv("out", columns=["a"]),
        P.write_parquet("out"),
    ]


def test_factories_return_processor_suppliers() -> None:
    for supplier in all_suppliers():
        assert isinstance(supplier, ProcessorSupplier)
        [processor] = supplier.get(1)
        assert type(processor).__name__.startswith("_"), type(processor)


def test_suppliers_survive_cloudpickle_with_lambdas() -> None:
    """Runners ship suppliers to executors with cloudpickle."""
    for supplier in [*all_suppliers(), P.map(lambda x: x + 1), P.fused(P.Chain().flat_map(lambda x: [x, x]))]:
        copy = pickle.loads(cloudpickle.dumps(supplier))
        [processor] = copy.get(1)
        assert type(processor) is type(supplier.get(1)[0])
