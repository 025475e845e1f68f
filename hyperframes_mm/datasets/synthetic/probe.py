"""Check that the benchmark needs motion: a single-frame probe against a frame-difference oracle.

Both probes are linear softmax classifiers on hand-made features. The single-frame probe sees
one frame (colour statistics, gradient energy, a coarse thumbnail) and should score near
chance; the motion oracle sees features of shake-compensated frame differences (object
velocity, divergence and motion energy over time) and should score far above it.
"""
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

import numpy as np
from scipy import ndimage, optimize

#: time step of the frame pairs the motion oracle compares, seconds
MOTION_STEP_S = 0.1


def single_frame_features(frame: np.ndarray) -> np.ndarray:
    """Appearance features of one ``[H, W, 3]`` uint8 frame (93 values).

    Per channel: mean, std, 10/50/90th percentiles and a 4-bin histogram; grey-level gradient
    magnitude mean and std; an 8x8 grey thumbnail.
    """
    pixels = frame.reshape(-1, 3).astype(np.float64)
    histogram = np.stack([np.histogram(pixels[:, c], bins=4, range=(0, 256))[0]
                          for c in range(3)]).ravel() / len(pixels)
    grey = pixels.mean(axis=1).reshape(frame.shape[:2])
    gy, gx = np.gradient(grey)
    magnitude = np.hypot(gx, gy)
    h, w = grey.shape
    thumbnail = grey[:h - h % 8, :w - w % 8].reshape(8, h // 8, 8, w // 8).mean(axis=(1, 3))
    return np.concatenate([
        pixels.mean(axis=0), pixels.std(axis=0),
        np.percentile(pixels, [10, 50, 90], axis=0).ravel(), histogram,
        [magnitude.mean(), magnitude.std()], thumbnail.ravel()])


def _solve_flow(weights: np.ndarray, basis: Sequence[np.ndarray],
                target: np.ndarray) -> np.ndarray:
    """Per pair, weighted least squares ``sum_k c_k basis_k ~ target`` over the pixels."""
    matrix = np.stack([[np.sum(weights * a * b, axis=(1, 2)) for b in basis] for a in basis])
    vector = np.stack([np.sum(weights * a * target, axis=(1, 2)) for a in basis])
    matrix = np.moveaxis(matrix, -1, 0) + 1e-6 * np.eye(len(basis))
    return np.linalg.solve(matrix, np.moveaxis(vector, -1, 0)[..., None])[..., 0]


def motion_features(frames: np.ndarray, fps: float) -> np.ndarray:
    """Features of the frame differences of one clip ``[N, H, W, 3]`` uint8 (18 values).

    For each pair of frames ``MOTION_STEP_S`` apart: the camera translation by global
    Lucas-Kanade over the whole (mostly background) frame; the residual difference after
    removing it; then, weighting pixels by that residual's energy, the moving objects'
    velocity (x, y) and divergence around their circular-mean centre. Each series becomes its
    mean, minimum and maximum over the clip; the residual energy becomes its mean, peak-to-mean
    ratio and std-to-mean ratio; the absolute values of the six velocity summaries follow.
    Velocities are in frame widths per second.
    """
    grey = ndimage.gaussian_filter(frames.astype(np.float32).mean(axis=3), sigma=(0, 1, 1))
    size = grey.shape[2]
    step = max(1, int(round(MOTION_STEP_S * fps)))
    first, second = grey[:-step], grey[step:]
    mean = 0.5 * (first + second)
    gy, gx = np.gradient(mean, axis=(1, 2))
    difference = second - first
    camera = _solve_flow(np.ones_like(mean), (gx, gy), -difference)
    residual = difference + gx * camera[:, 0, None, None] + gy * camera[:, 1, None, None]
    energy = residual ** 2
    weights = energy / (energy.sum(axis=(1, 2), keepdims=True) + 1e-6)
    velocity = _solve_flow(weights, (gx, gy), -residual)
    angles = 2 * np.pi * np.arange(size) / size
    centre = []
    for axis in (1, 2):
        profile = weights.sum(axis=3 - axis)
        centre.append(np.arctan2(profile @ np.sin(angles), profile @ np.cos(angles))
                      * size / (2 * np.pi))
    coords = np.arange(size, dtype=np.float32)
    ry = (coords[None, :, None] - centre[0][:, None, None] + size / 2) % size - size / 2
    rx = (coords[None, None, :] - centre[1][:, None, None] + size / 2) % size - size / 2
    divergence = _solve_flow(weights, (rx * gx + ry * gy, ), -residual)[:, 0]
    scale = fps / step / size
    series = [velocity[:, 0] * scale, velocity[:, 1] * scale, divergence * fps / step]
    power = energy.mean(axis=(1, 2))
    summary = [f(s) for s in series for f in (np.mean, np.min, np.max)]
    return np.concatenate([summary, [np.log(power.mean() + 1e-6),
                                     power.max() / (power.mean() + 1e-6),
                                     power.std() / (power.mean() + 1e-6)],
                           np.abs(summary[:6])])


class SoftmaxProbe:
    """L2-regularised multinomial logistic regression on standardised features.

    Args:
        l2 (float): weight decay on the weights (not the bias). Defaults to 1.0.
    """

    def __init__(self, l2: float = 1.0):
        self.l2 = l2

    def fit(self, features: np.ndarray, labels: np.ndarray, num_classes: int) -> 'SoftmaxProbe':
        """Fit by L-BFGS from zero weights (deterministic)."""
        features = np.asarray(features, dtype=np.float64)
        labels = np.asarray(labels)
        self.mean = features.mean(axis=0)
        self.std = features.std(axis=0) + 1e-8
        x = np.hstack([(features - self.mean) / self.std, np.ones((len(features), 1))])
        onehot = np.eye(num_classes)[labels]
        penalty = np.ones((x.shape[1], 1))
        penalty[-1] = 0.0

        def loss(flat):
            w = flat.reshape(x.shape[1], num_classes)
            logits = x @ w
            logits -= logits.max(axis=1, keepdims=True)
            log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
            value = -(onehot * log_p).sum() / len(x) + 0.5 * self.l2 * np.sum(penalty * w ** 2)
            grad = x.T @ (np.exp(log_p) - onehot) / len(x) + self.l2 * penalty * w
            return value, grad.ravel()

        start = np.zeros(x.shape[1] * num_classes)
        result = optimize.minimize(loss, start, jac=True, method='L-BFGS-B',
                                   options=dict(maxiter=500))
        self.weights = result.x.reshape(x.shape[1], num_classes)
        return self

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Most probable label per row."""
        x = (np.asarray(features, dtype=np.float64) - self.mean) / self.std
        return np.argmax(x @ self.weights[:-1] + self.weights[-1], axis=1)


def probe_accuracies(train: Sequence[Tuple[np.ndarray, float, int]],
                     test: Sequence[Tuple[np.ndarray, float, int]], num_classes: int,
                     seed: int = 0, train_frames: int = 4) -> Dict[str, object]:
    """Accuracy of the single-frame probe and of the motion oracle.

    Args:
        train, test: ``(frames [N, H, W, 3] uint8, fps, label)`` per clip.
        num_classes (int): number of labels.
        seed (int): draws the random frames the single-frame probe sees. Defaults to 0.
        train_frames (int): random frames per training clip for the single-frame probe (one
            per test clip). Defaults to 4.

    Returns:
        dict: ``single_frame`` and ``motion`` accuracies, ``chance`` (1 / num_classes), and
        per-label predictions ``single_frame_pred``, ``motion_pred`` and ``labels`` of the
        test clips.
    """
    rng = np.random.default_rng(seed)
    single_x, single_y = [], []
    for frames, _, label in train:
        for index in rng.choice(len(frames), size=min(train_frames, len(frames)),
                                replace=False):
            single_x.append(single_frame_features(frames[index]))
            single_y.append(label)
    single = SoftmaxProbe().fit(np.array(single_x), np.array(single_y), num_classes)
    motion = SoftmaxProbe().fit(np.array([motion_features(f, fps) for f, fps, _ in train]),
                                np.array([label for _, _, label in train]), num_classes)
    labels = np.array([label for _, _, label in test])
    single_pred = single.predict(np.array([
        single_frame_features(frames[rng.integers(len(frames))]) for frames, _, _ in test]))
    motion_pred = motion.predict(np.array([motion_features(f, fps) for f, fps, _ in test]))
    return dict(single_frame=float(np.mean(single_pred == labels)),
                motion=float(np.mean(motion_pred == labels)), chance=1.0 / num_classes,
                single_frame_pred=single_pred, motion_pred=motion_pred, labels=labels)


def read_split(root: Union[str, Path], split: str) -> List[Tuple[np.ndarray, float, int]]:
    """Decode every clip of ``split`` of a generated dataset with decord, as mmaction2 does."""
    from ..annotations import read_list_lines
    from ..video_io import open_video
    from .generate import load_meta
    root = Path(root)
    meta = load_meta(root)
    clips = []
    for line in read_list_lines(root / meta['annotations'][split]):
        relative, label = line.fields
        reader = open_video(str(root / relative))
        frames = reader.get_batch(list(range(len(reader)))).asnumpy()
        clips.append((frames, meta['videos'][relative]['fps'], int(label)))
    return clips
