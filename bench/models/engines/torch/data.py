"""The PyTorch loop's data pipelines: tensors preloaded on the device, ``TensorDataset`` and torchvision's MNIST
through a ``DataLoader``, where each makes its batches, and the source's real-time augmentation.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.families.torch import TorchEpochSettings
from bench.models.datasets import Dataset
from bench.models.engines import Unsupported
from bench.models.workloads import Workload
from bench.models.workloads.training import Augmentation

#: Normalize constants of the torchvision pipeline: MNIST's mean and std, as PyTorch's own MNIST example
#: (pytorch/examples mnist/main.py) uses them. The tuning study's post does not print its constants: our assumption.
MNIST_NORMALIZE = ((0.1307,), (0.3081,))


def to_tensors(torch, xs: tuple[np.ndarray, ...], layout, dev):
    out = []
    for i, x in enumerate(xs):
        perm = layout[i] if layout else None
        arr = np.ascontiguousarray(x.transpose(perm)) if perm else x
        t = torch.from_numpy(arr)
        out.append((t.long() if t.dtype == torch.int32 else t).to(dev))
    return tuple(out)


def idx_bytes(array: np.ndarray) -> bytes:
    """``array`` (uint8, 1 to 3 axes) in the IDX format of MNIST's files: magic ``0x0000 08 <ndim>``, each axis's
    length as a big-endian int32, then the bytes (what torchvision's ``read_sn3_pascalvincent_tensor`` reads).

    Raises:
        ValueError: not uint8.
    """
    if array.dtype != np.uint8:
        raise ValueError(f"IDX files here hold uint8, got {array.dtype}")
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, dtype=">i4").tobytes()
    return header + np.ascontiguousarray(array).tobytes()


def write_mnist_idx(root: Path, ds: Dataset) -> Path:
    """Write ``ds`` (MNIST-shaped images in [0, 1], (N, 28, 28, 1)) as the four raw files
    ``torchvision.datasets.MNIST(root, download=False)`` reads: ``root/MNIST/raw/{train,t10k}-images-idx3-ubyte``
    and ``-labels-idx1-ubyte`` (train: ``x_train``; t10k: ``x_val``). Pixels go back to uint8 (x * 255, rounded:
    exact for the real data, which came from uint8). Returns the raw folder."""
    raw = Path(root) / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, xs, y in (("train", ds.x_train, ds.y_train), ("t10k", ds.x_val, ds.y_val)):
        images = np.clip(np.rint(xs[0][..., 0] * 255.0), 0, 255).astype(np.uint8)
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(idx_bytes(images))
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(idx_bytes(y.astype(np.uint8)))
    return raw


def torchvision_mnist(ds: Dataset):
    """The tuning study's "torchvision dataset" pipeline: ``torchvision.datasets.MNIST(root, train=True,
    transform=Compose([ToTensor(), Normalize(*MNIST_NORMALIZE)]), download=False)`` over the cell's MNIST arrays
    (real or synthetic) written as MNIST's IDX files in a scratch directory (removed once read: torchvision
    holds the images in memory). Each item is a PIL image made on the fly and transformed, as the study ran it.

    Raises:
        Unsupported: ``ds`` is not MNIST-shaped.
    """
    from torchvision import datasets, transforms

    if ds.name != "mnist" or len(ds.x_train) != 1 or ds.x_train[0].shape[1:] != (28, 28, 1):
        raise Unsupported(f"torchvision_dataset_transforms reads torchvision.datasets.MNIST (the tuning study's "
                          f"pipeline); this workload trains on {ds.name}")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(*MNIST_NORMALIZE)])
    with tempfile.TemporaryDirectory(prefix="bench-mnist-") as root:
        write_mnist_idx(Path(root), ds)
        return datasets.MNIST(root, train=True, transform=transform, download=False)


class AugmentedImages:
    """A map-style dataset: image i (a CHW float tensor) through ``transform`` each time it is read, and its
    label. Module-level, so DataLoader workers can pickle it under any start method."""

    def __init__(self, images, labels, transform):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        return self.transform(self.images[i]), self.labels[i]


def augment_transform(aug: Augmentation, height: int, width: int):
    """torchvision transforms that do ``aug`` to one (C, H, W) image, as ImageDataGenerator.random_transform did
    (keras/preprocessing/image.py@2.0.8:555-612): a shift of ``round(uniform(-r, r) * size)`` pixels per axis
    (``v2.RandomAffine``, torchvision/transforms/v2/_geometry.py@v0.28.0:748-751, draws exactly that), the pixels
    shifted in repeating the edge (2.0.8's ``fill_mode='nearest'``: an edge ``Pad`` wide enough for the largest
    shift, then ``CenterCrop`` back), then a left-right flip with probability 0.5.

    Raises:
        ValueError: a fill mode or interpolation other than ``nearest``.
    """
    from torchvision.transforms import InterpolationMode, v2

    if (aug.fill_mode, aug.interpolation) != ("nearest", "nearest"):
        raise ValueError("the PyTorch augmentation implements fill_mode and interpolation 'nearest' only")
    pad = math.ceil(max(aug.height_shift_range * height, aug.width_shift_range * width))
    # RandomAffine draws a shift as a fraction of the (padded) image it sees
    translate = (aug.width_shift_range * width / (width + 2 * pad),
                 aug.height_shift_range * height / (height + 2 * pad))
    steps = [v2.Pad(pad, padding_mode="edge"),
             v2.RandomAffine(degrees=0.0, translate=translate, interpolation=InterpolationMode.NEAREST),
             v2.CenterCrop((height, width))]
    if aug.horizontal_flip:
        steps.append(v2.RandomHorizontalFlip(0.5))
    return v2.Compose(steps)


#: Where augmented batches come from (``settings.train_data_placement``).
AUGMENTED_PLACEMENT = "host (DataLoader: per-image augmentation by one background worker process, batches queued)"


def augmented_loader(torch, aug: Augmentation, ds: Dataset, workload: Workload, batch_size: int, dev):
    """A DataLoader of augmented training batches, as Keras 2.0.8's ``fit_generator(datagen.flow(...))`` ran them
    (examples/cifar10_cnn.py@2.0.8:104-107; keras/engine/training.py@2.0.8:1839-1841): shuffled each epoch, each
    image augmented on its own (``augment_transform``) on the host by ``aug.workers`` background worker(s) that
    keep ``aug.max_queue_size`` batches queued (``prefetch_factor``) while the device trains, ``n // batch``
    steps an epoch (``drop_last``). A worker is a process here (the source's was a thread): a Python thread
    would share the training loop's interpreter lock. ``persistent_workers``: the source started one enqueuer
    for the whole fit (keras/engine/training.py@2.0.8:1991-2006); ``pin_memory`` on a CUDA device is ours (the
    source had no such step), recorded in the returned block and disclosed in docs/suites/classic.md.

    Returns:
        the loader, and the ``settings.augmentation`` block (the parameters and how they ran).

    Raises:
        ValueError: the workload has more than one input, or fewer training examples than a batch.
    """
    aug.check(len(ds.x_train), ds.n_train, batch_size)
    (images,) = to_tensors(torch, ds.x_train, workload.torch_layout, torch.device("cpu"))
    _, _, height, width = images.shape
    transform = augment_transform(aug, height, width)
    dataset = AugmentedImages(images, torch.from_numpy(ds.y_train).long(), transform)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, shuffle=True, num_workers=aug.workers, persistent_workers=True,
        prefetch_factor=max(aug.max_queue_size // aug.workers, 1), drop_last=aug.drop_remainder,
        pin_memory=dev.type == "cuda", generator=torch.Generator(device="cpu").manual_seed(0))
    how = {**aug.record(), "where": AUGMENTED_PLACEMENT, "shuffle_buffer": ds.n_train,
           "persistent_workers": loader.persistent_workers, "pin_memory": loader.pin_memory,
           "implementation": "torchvision.transforms.v2: " + " -> ".join(map(repr, transform.transforms))
           .replace("\n", "")}
    return loader, how


def loader_kwargs(torch, batch_size: int, workers: int, dev, pin_memory: bool = False,
                  persistent_workers: bool = False) -> dict[str, Any]:
    """``DataLoader`` arguments shared by the loader pipelines: shuffled every epoch, seeded.

    ``pin_memory`` and ``persistent_workers`` default to PyTorch's own ``DataLoader`` defaults, both False
    (torch/utils/data/dataloader.py@v2.13.0), and every other option is left at its default: the tuning study's
    post ran its tensor datasets through a loader with the standard parameters and ``num_workers=0``
    (``bench.core.reference.tuning_study``; docs/suites/tuning.md); True for either is a named variant
    (``TorchEpochSettings``). Each is passed only where it can take effect: pinning with a CUDA device, persistence
    with worker processes (torch raises "persistent_workers option needs num_workers > 0" otherwise).

    The shuffle generator lives on the CPU whatever ``dev`` is: torch's ``RandomSampler`` draws its
    permutation on the CPU and raises "Expected a 'cpu' device type for generator" when given a CUDA
    one (torch 2.13). Tensors preloaded on the GPU are indexed with those CPU indices, which works.
    """
    return {"batch_size": batch_size, "shuffle": True, "num_workers": workers,
            "persistent_workers": persistent_workers and workers > 0,
            "pin_memory": pin_memory and dev.type == "cuda",
            "generator": torch.Generator(device="cpu").manual_seed(0)}


def placement(pipeline: str, preload: bool) -> str:
    """Where ``make_batches`` makes each training batch of ``pipeline`` (``settings.train_data_placement``: its
    first word, ``host`` or ``device``, is what the report's Keras-overhead rows compare).

    Raises:
        ValueError: an unknown pipeline.
    """
    if pipeline == "tensors_on_device":
        return "device (torch tensors: the whole set on the device; a shuffled index per step)"
    if pipeline == "tensor_dataset":
        return ("device (TensorDataset of tensors preloaded on the device, DataLoader batches)" if preload else
                "host (TensorDataset + DataLoader on the CPU; each batch copied to the device)")
    if pipeline == "torchvision_dataset_transforms":
        return "host (torchvision MNIST dataset, per-image transforms in the DataLoader; each batch copied)"
    raise ValueError(f"unknown data_pipeline {pipeline!r}")


def make_batches(torch, pipeline: str, settings: TorchEpochSettings, ds: Dataset, workload: Workload,
                 batch_size: int, dev):
    """An epoch-iterable of (inputs tuple, labels) on ``dev`` for the chosen data pipeline."""
    n = ds.n_train
    if pipeline == "tensors_on_device":
        xs = to_tensors(torch, ds.x_train, workload.torch_layout, dev)
        y = torch.from_numpy(ds.y_train).long().to(dev)

        def epoch():
            order = torch.randperm(n, device=dev)
            for i in range(0, n, batch_size):
                idx = order[i:i + batch_size]
                yield tuple(x[idx] for x in xs), y[idx]

        return epoch
    loader_kw = loader_kwargs(torch, batch_size, settings.num_workers, dev, settings.pin_memory,
                              settings.persistent_workers)
    if pipeline == "tensor_dataset":
        target = dev if settings.preload else torch.device("cpu")
        xs = to_tensors(torch, ds.x_train, workload.torch_layout, target)
        y = torch.from_numpy(ds.y_train).long().to(target)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*xs, y), **loader_kw)
    elif pipeline == "torchvision_dataset_transforms":
        loader = torch.utils.data.DataLoader(torchvision_mnist(ds), **loader_kw)
    else:
        raise ValueError(f"unknown data_pipeline {pipeline!r}")

    return on_device(loader, dev)


def on_device(loader, dev):
    """An epoch-iterable of a DataLoader's (inputs tuple, labels) batches moved to ``dev``."""

    def loader_epoch():
        for *xb, yb in loader:
            yield tuple(x.to(dev, non_blocking=True) for x in xb), yb.to(dev, non_blocking=True)

    return loader_epoch

