"""Pure numpy rendering of one synthetic clip: a scene is drawn, then turned into frames.

A scene holds every random choice of a clip (frame rate, textured background, camera shake,
brightness flicker, noise level, the actor and its distractors). Actor and distractors are
drawn from one appearance distribution, start at uniform positions on the torus and get the
same slow wobble; only the actor adds its class motion (:func:`.classes.actor_motion`). Sizes
and orientations of every object in a single frame follow one distribution in every class, so
no single frame tells the classes apart.
"""
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np

from .classes import actor_motion

#: radius at scale phase 0, frame widths, log-uniform; phase 1 doubles it
RADIUS_RANGE = (0.1, 0.14)
#: how many distractor objects a clip has (inclusive range)
DISTRACTOR_RANGE = (1, 2)
#: camera shake: amplitude in frame widths and frequency range in Hz
CAMERA_SHAKE = 0.005
CAMERA_SHAKE_HZ = (0.5, 3.0)
#: wobble of every object (actor included): amplitude in frame widths, frequencies in Hz
WOBBLE = 0.01
WOBBLE_HZ = (0.2, 0.8)
#: relative brightness flicker of the whole frame, and its frequencies in Hz
FLICKER = 0.04
FLICKER_HZ = (0.3, 2.0)
#: per-pixel Gaussian noise, standard deviation in grey levels, drawn per clip
NOISE_SIGMA_RANGE = (2.0, 6.0)
#: background: base grey-level range, number of gratings, their frequency (cycles per frame
#: width, log-uniform) and per-channel amplitude
BACKGROUND_BASE = (70.0, 185.0)
BACKGROUND_GRATINGS = 5
BACKGROUND_FREQUENCY = (1.5, 8.0)
BACKGROUND_AMPLITUDE = 25.0


@dataclass(frozen=True)
class Appearance:
    """Shape and texture of one object, in the object's own frame (radius 1).

    Attributes:
        colours (np.ndarray): ``[2, 3]`` RGB of the two stripe colours.
        harmonics (np.ndarray): ``[2]`` amplitudes of the 2nd and 3rd harmonics of the outline
            ``r(phi) = 1 + a2 cos(2 phi + p2) + a3 cos(3 phi + p3)``.
        harmonic_phases (np.ndarray): ``[2]`` phases p2, p3.
        stripe (np.ndarray): ``[3]`` stripe frequency (cycles per radius), direction and phase
            (radians).
    """
    colours: np.ndarray
    harmonics: np.ndarray
    harmonic_phases: np.ndarray
    stripe: np.ndarray


@dataclass(frozen=True)
class ObjectTrack:
    """One object over a clip: appearance and ``[N]``-long state (frame widths, radians)."""
    appearance: Appearance
    centre: np.ndarray
    radius: np.ndarray
    angle: np.ndarray


@dataclass(frozen=True)
class Background:
    """A sum of coloured sinusoidal gratings over a base colour."""
    base: np.ndarray
    directions: np.ndarray
    frequencies: np.ndarray
    phases: np.ndarray
    amplitudes: np.ndarray


@dataclass(frozen=True)
class Scene:
    """Every random choice of one clip; :func:`render_scene` turns it into frames.

    Attributes:
        name (str): the class of the clip.
        fps (float): frame rate.
        times (np.ndarray): ``[N]`` frame times, seconds.
        background (Background): the static textured background.
        camera (np.ndarray): ``[N, 2]`` (dy, dx) camera shake, frame widths.
        flicker (np.ndarray): ``[N]`` brightness gain.
        noise_sigma (float): per-pixel noise, grey levels.
        objects (List[ObjectTrack]): objects in drawing order (later ones on top).
        actor (int): index of the actor in ``objects``.
    """
    name: str
    fps: float
    times: np.ndarray
    background: Background
    camera: np.ndarray
    flicker: np.ndarray
    noise_sigma: float
    objects: List[ObjectTrack]
    actor: int


def smooth_signal(rng: np.random.Generator, times: np.ndarray, amplitude: float,
                  hz: Tuple[float, float], dims: int, components: int = 3) -> np.ndarray:
    """A smooth random signal ``[N, dims]``, a sum of sinusoids defined in seconds.

    Each of the ``components`` sinusoids per dimension has amplitude ``amplitude /
    components``, a frequency uniform in ``hz`` and a uniform phase, so ``|signal| <=
    amplitude`` and its statistics do not depend on the frame rate.
    """
    frequencies = rng.uniform(hz[0], hz[1], (components, dims))
    phases = rng.uniform(0.0, 2 * np.pi, (components, dims))
    waves = np.sin(2 * np.pi * frequencies[None] * np.asarray(times)[:, None, None] + phases[None])
    return amplitude / components * waves.sum(axis=1)


def draw_appearance(rng: np.random.Generator) -> Appearance:
    """Draw the shape and texture of one object (the same distribution for every object)."""
    return Appearance(
        colours=rng.uniform(0.0, 255.0, (2, 3)),
        harmonics=np.array([rng.uniform(0.15, 0.3), rng.uniform(0.05, 0.15)]),
        harmonic_phases=rng.uniform(0.0, 2 * np.pi, 2),
        stripe=np.array([rng.uniform(0.6, 1.2), rng.uniform(0.0, np.pi),
                         rng.uniform(0.0, 2 * np.pi)]))


def draw_background(rng: np.random.Generator) -> Background:
    """Draw a textured background (the same distribution for every clip)."""
    count = BACKGROUND_GRATINGS
    low, high = np.log(BACKGROUND_FREQUENCY)
    return Background(
        base=rng.uniform(*BACKGROUND_BASE, 3),
        directions=rng.uniform(0.0, np.pi, count),
        frequencies=np.exp(rng.uniform(low, high, count)),
        phases=rng.uniform(0.0, 2 * np.pi, count),
        amplitudes=rng.uniform(-BACKGROUND_AMPLITUDE, BACKGROUND_AMPLITUDE, (count, 3)))


def sample_scene(name: str, rng: np.random.Generator, duration: float,
                 fps_choices: Sequence[float]) -> Scene:
    """Draw every random choice of one clip of class ``name``.

    Args:
        name (str): class name (see :data:`.classes.MOTION_CLASSES`).
        rng (np.random.Generator): the clip's generator; the scene is a function of its state.
        duration (float): clip length in seconds.
        fps_choices (Sequence[float]): frame rates to draw from, uniformly.

    Returns:
        Scene: the clip's scene with ``round(duration * fps)`` frames.
    """
    fps = float(fps_choices[rng.integers(len(fps_choices))])
    times = np.arange(int(round(duration * fps))) / fps
    background = draw_background(rng)
    camera = smooth_signal(rng, times, CAMERA_SHAKE, CAMERA_SHAKE_HZ, dims=2)
    flicker = 1.0 + smooth_signal(rng, times, FLICKER, FLICKER_HZ, dims=1)[:, 0]
    noise_sigma = rng.uniform(*NOISE_SIGMA_RANGE)
    count = 1 + rng.integers(DISTRACTOR_RANGE[0], DISTRACTOR_RANGE[1] + 1)
    actor = int(rng.integers(count))
    motion = actor_motion(name, times, duration, rng)
    low, high = np.log(RADIUS_RANGE)
    objects = []
    for index in range(count):
        appearance = draw_appearance(rng)
        start = rng.uniform(0.0, 1.0, 2)
        base_radius = np.exp(rng.uniform(low, high))
        base_angle = rng.uniform(0.0, 2 * np.pi)
        wobble = smooth_signal(rng, times, WOBBLE, WOBBLE_HZ, dims=2)
        if index == actor:
            centre = start + wobble + motion.offset
            radius = base_radius * 2.0 ** motion.scale_phase
            angle = base_angle + motion.turn
        else:
            centre = start + wobble
            radius = np.full_like(times, base_radius * 2.0 ** rng.uniform(0.0, 1.0))
            angle = np.full_like(times, base_angle)
        objects.append(ObjectTrack(appearance, np.mod(centre, 1.0), radius, angle))
    return Scene(name, fps, times, background, camera, flicker, noise_sigma, objects, actor)


def background_basis(background: Background, size: int) -> np.ndarray:
    """Sine and cosine of every grating's phase at every pixel of an unshifted camera.

    Returns:
        np.ndarray: ``[2, size * size, K]`` float32; row-major pixels, K gratings.
    """
    coords = (np.arange(size, dtype=np.float64) + 0.5) / size
    b = background
    projection = (coords[:, None, None] * np.sin(b.directions)
                  + coords[None, :, None] * np.cos(b.directions))
    phase = (2 * np.pi * b.frequencies * projection + b.phases).reshape(size * size, -1)
    return np.stack([np.sin(phase), np.cos(phase)]).astype(np.float32)


def render_background(background: Background, basis: np.ndarray, shift: np.ndarray,
                      size: int) -> np.ndarray:
    """The background seen by a camera shifted by ``shift`` (dy, dx frame widths).

    A shift only adds a phase ``-2 pi f (shift . direction)`` to each grating, so the frame is
    two small matrix products with the precomputed :func:`background_basis`.

    Returns:
        np.ndarray: ``[size, size, 3]`` float32 grey levels (not clipped).
    """
    b = background
    delta = -2 * np.pi * b.frequencies * (shift[0] * np.sin(b.directions)
                                          + shift[1] * np.cos(b.directions))
    sin_weights = (np.cos(delta)[:, None] * b.amplitudes).astype(np.float32)
    cos_weights = (np.sin(delta)[:, None] * b.amplitudes).astype(np.float32)
    frame = basis[0] @ sin_weights + basis[1] @ cos_weights + b.base.astype(np.float32)
    return frame.reshape(size, size, 3)


def composite_object(frame: np.ndarray, appearance: Appearance, centre: np.ndarray,
                     radius: float, angle: float) -> None:
    """Draw one object into ``frame`` in place, anti-aliased, wrapping around the edges.

    Args:
        frame (np.ndarray): ``[size, size, 3]`` float32 canvas.
        appearance (Appearance): the object's shape and texture.
        centre (np.ndarray): (y, x) in frame widths; the canvas is a torus.
        radius (float): frame widths.
        angle (float): orientation, radians, clockwise on screen.
    """
    size = frame.shape[0]
    radius_px = radius * size
    reach = radius_px * (1.0 + appearance.harmonics.sum()) + 1.0
    half = min(int(np.ceil(reach)), size // 2 - 1)
    cy, cx = centre * size - 0.5
    iy = int(np.floor(cy)) + np.arange(-half, half + 2)
    ix = int(np.floor(cx)) + np.arange(-half, half + 2)
    dy = (iy - cy).astype(np.float32)[:, None]
    dx = (ix - cx).astype(np.float32)[None, :]
    cos, sin = np.float32(np.cos(angle) / radius_px), np.float32(np.sin(angle) / radius_px)
    u = cos * dx + sin * dy
    v = cos * dy - sin * dx
    phi = np.arctan2(v, u)
    (a2, a3), (p2, p3) = appearance.harmonics.tolist(), appearance.harmonic_phases.tolist()
    outline = 1.0 + a2 * np.cos(2 * phi + p2) + a3 * np.cos(3 * phi + p3)
    alpha = np.clip((outline - np.hypot(u, v)) * float(radius_px) + 0.5, 0.0, 1.0)[..., None]
    frequency, direction, phase = appearance.stripe.tolist()
    across = u * np.cos(direction) + v * np.sin(direction)
    mix = 0.5 + 0.5 * np.tanh(2.5 * np.sin(2 * np.pi * frequency * across + phase))[..., None]
    c0, c1 = appearance.colours.astype(np.float32)
    colour = c0 + (c1 - c0) * mix
    rows, cols = np.ix_(iy % size, ix % size)
    frame[rows, cols] = frame[rows, cols] * (1.0 - alpha) + colour * alpha


def render_scene(scene: Scene, size: int, rng: np.random.Generator) -> np.ndarray:
    """Frames of ``scene`` at ``size`` x ``size`` pixels.

    Args:
        scene (Scene): from :func:`sample_scene`.
        size (int): frame side in pixels.
        rng (np.random.Generator): draws the per-pixel noise.

    Returns:
        np.ndarray: ``[N, size, size, 3]`` uint8 RGB frames.
    """
    frames = np.empty((len(scene.times), size, size, 3), dtype=np.uint8)
    basis = background_basis(scene.background, size)
    for t in range(len(scene.times)):
        frame = render_background(scene.background, basis, scene.camera[t], size)
        for track in scene.objects:
            composite_object(frame, track.appearance, track.centre[t] + scene.camera[t],
                             track.radius[t], track.angle[t])
        frame *= scene.flicker[t]
        frame += scene.noise_sigma * rng.standard_normal(frame.shape, dtype=np.float32)
        frames[t] = np.clip(np.rint(frame), 0, 255).astype(np.uint8)
    return frames
