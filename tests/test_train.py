"""The trainer follows the paper's recipe (S1), is deterministic on CPU and trains on any tensors."""
import pytest
import torch
import torch.nn.functional as F

from overinterp.zoo import train
from overinterp.experiments import runs
from overinterp.zoo import data
from overinterp.store import Store
from overinterp.zoo.models import build_model
from overinterp.zoo.train import TrainConfig


def _quadrant_data(n=512, seed=0):
    """Class = which of 4 quadrants holds a bright square: learnable in one epoch."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=g)
    x = 0.1 * torch.randn(n, 1, 16, 16, generator=g)
    for i, c in enumerate(y.tolist()):
        r, s = divmod(c, 2)
        x[i, 0, 8 * r + 2:8 * r + 6, 8 * s + 2:8 * s + 6] += 2.0
    return x, y


def test_augment_batch_returns_shifted_windows_of_the_black_padded_image():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 2, 5, 5, generator=g)
    pad_value = torch.tensor([-1.0, -2.0])
    out = train.augment_batch(x, pad_value, torch.Generator().manual_seed(1))
    assert out.shape == x.shape
    padded = F.pad(x, (4, 4, 4, 4))
    padded[:, 0][padded[:, 0] == 0] = -1.0
    padded[:, 1][padded[:, 1] == 0] = -2.0
    for i in range(len(x)):
        windows = [padded[i, :, r:r + 5, c:c + 5] for r in range(9) for c in range(9)]
        assert any(torch.equal(out[i], w) or torch.equal(out[i], w.flip(2)) for w in windows)


def test_fit_is_deterministic_on_cpu_and_learns_an_easy_task():
    x, y = _quadrant_data()
    cfg = TrainConfig(epochs=2, batch_size=32, augment=False)
    models = []
    for _ in range(2):
        torch.manual_seed(0)
        m = build_model("cnn", 1, 4, width=4)
        hist = train.fit(m, x, y, cfg, seed=3, device="cpu", progress=False)
        models.append(m)
    for a, b in zip(models[0].state_dict().values(), models[1].state_dict().values()):
        assert torch.equal(a, b)
    assert hist[-1]["train_acc"] > 0.9
    assert train.accuracy(models[0], *_quadrant_data(seed=1), device="cpu") > 0.9


def test_learning_rate_is_divided_by_5_three_times_at_scaled_milestones():
    x, y = _quadrant_data(64)
    m = build_model("cnn", 1, 4, width=2)
    seen = []
    orig_step = torch.optim.SGD.step

    def spy(self, *a, **k):
        seen.append(self.param_groups[0]["lr"])
        return orig_step(self, *a, **k)

    torch.optim.SGD.step = spy
    try:
        train.fit(m, x, y, TrainConfig(epochs=10, batch_size=32, augment=False), device="cpu", progress=False)
    finally:
        torch.optim.SGD.step = orig_step
    # 20 steps: lr 0.1 for steps 0-5, 0.02 for 6-11, 0.004 for 12-15, 0.0008 after (30/60/80%).
    assert seen[0] == pytest.approx(0.1) and seen[6] == pytest.approx(0.02)
    assert seen[12] == pytest.approx(0.004) and seen[-1] == pytest.approx(0.0008)


def test_input_dropout_masks_whole_pixels_in_training_and_is_deterministic_in_eval():
    torch.manual_seed(0)
    seen = []

    class Spy(torch.nn.Module):
        def forward(self, x):
            seen.append(x.clone())
            return x.flatten(1)[:, :3]

    wrapped = train.InputDropout(Spy(), keep_prob=0.5, samples=4)
    x = torch.ones(2, 3, 8, 8)
    wrapped.train()(x)
    zero = seen[-1] == 0
    assert torch.equal(zero[:, :1].expand_as(zero), zero)   # all channels of a pixel together
    assert 0.2 < zero.float().mean() < 0.8
    wrapped.eval()
    torch.testing.assert_close(wrapped(x), wrapped(x))
    with pytest.raises(ValueError, match="keep_prob"):
        train.InputDropout(Spy(), keep_prob=0.0)


def test_input_dropout_in_eval_is_the_mean_of_the_logits_over_its_fixed_masks():
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(2 * 5 * 5, 4), torch.nn.Tanh(),
                              torch.nn.Linear(4, 3, bias=False))
    wrapped = train.InputDropout(net, keep_prob=0.6, samples=5, seed=3).eval()
    x = torch.randn(4, 2, 5, 5)
    masks = wrapped.eval_masks(x)
    assert masks.shape == (5, 1, 1, 5, 5) and 0 < masks.mean() < 1
    want = torch.stack([net(x * m) for m in masks]).mean(0)
    torch.testing.assert_close(wrapped(x), want)
    probs = torch.stack([torch.softmax(net(x * m), -1) for m in masks]).mean(0).log()   # the old averaging
    assert not torch.allclose(wrapped(x), probs, atol=1e-3)


def test_trained_model_is_cached_in_the_store_with_its_config(tmp_path, monkeypatch):
    store = Store(tmp_path)
    model = runs.trained_model("fashion-mnist", "cnn", "tiny", seed=0, device="cpu", store=store, progress=False)
    test = data.load("fashion-mnist", "test")
    assert train.accuracy(model, test.images[:500], test.labels[:500], device="cpu") > 0.5   # 10 classes: well above chance
    assert model.info["test_acc"] is None and not model.training        # the book does not evaluate the whole test set
    monkeypatch.setattr(train, "fit", lambda *a, **k: pytest.fail("retrained a cached model"))
    again = runs.trained_model("fashion-mnist", "cnn", "tiny", seed=0, device="cpu", store=store, progress=False)
    for a, b in zip(model.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)
    assert store.exists("model", runs.model_config("fashion-mnist", "cnn", "tiny", 0))
    # model_key names the folder the model was saved in, and changes with any of its settings
    folders = [p.name for p in (tmp_path / "model").iterdir()]
    assert folders == [runs.model_key("fashion-mnist", "cnn", "tiny", 0)]
    assert runs.model_key("fashion-mnist", "cnn", "tiny", 1) != folders[0] != runs.model_key("fashion-mnist", "cnn", "tiny", epochs=3)
