"""The model zoo: real models, random weights, no downloads.

The test suite checks every compiled model against eager on them (tests/zoo/),
and the model benchmark times them. Each entry builds a model in eval mode
and example inputs; `size="tiny"` is for tests, `"small"` for the CPU
benchmark, `"base"` for the GPU one.

* `resnet18`, `resnet50`: ResNets written in plain torch.nn, as torchvision writes them:
  in-place ReLU, BatchNorm, and `out += identity`.
* `transformer_encoder_layer`: `nn.TransformerEncoderLayer`.
* `nanogpt_block`: one block of Karpathy's nanoGPT, with `F.scaled_dot_product_attention`
  or with the causal softmax written by hand.
* `bert`, `gpt2`, `vit`, `llama`: Hugging Face `transformers` models from small configs;
  at `"base"`, BERT-base, GPT-2 (124M) and ViT-B/16 widths, depths and heads (vocabularies
  stay small), and the issue's Llama-style model (RoPE, RMSNorm, GQA, SwiGLU; 8 layers,
  1024 wide).

Every entry takes `batch=` (and the text models `seq=`) in place of the size's, so that
one width can be timed where launch overhead shows (batch 8, seq 128) and where it does not.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def tensors_of(value, depth=0) -> list:
    """Every tensor in an output: tuples, dicts, ModelOutputs and caches (their attributes)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 4 or value is None or isinstance(value, (int, float, str, bool)):
        return []
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = list(getattr(value, "__dict__", {}).values())
    return [t for item in items for t in tensors_of(item, depth + 1)]


SIZES = {  # width, depth, batch, sequence length (or image side)
    "tiny": (32, 2, 2, 16),
    "small": (256, 4, 8, 128),
    "base": (768, 12, 16, 512),
}


def shape(size: str, batch: int | None = None, seq: int | None = None) -> tuple:
    """The size's width, depth, batch and sequence length, with the caller's batch and
    sequence length in place of the size's where given."""
    width, depth, size_batch, size_seq = SIZES[size]
    return width, depth, batch or size_batch, seq or size_seq


def heads(width: int) -> int:
    """Attention heads of 64 channels, as BERT-base, GPT-2 and ViT-B/16 have (12 at 768);
    4 for the narrower sizes, as before."""
    return max(4, width // 64)


# --- ResNet-18, as torchvision writes it ------------------------------------------------------


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Bottleneck(nn.Module):
    """ResNet-50's block: 1x1 down, 3x3, 1x1 up (torchvision's, stride on the 3x3)."""

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, layers=(2, 2, 2, 2), num_classes=1000, width=64, block=BasicBlock):
        super().__init__()
        self.block = block
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        out = planes * self.block.expansion
        if stride != 1 or self.inplanes != out:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, out, 1, stride, bias=False), nn.BatchNorm2d(out)
            )
        layers = [self.block(self.inplanes, planes, stride, downsample)]
        self.inplanes = out
        layers += [self.block(out, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


IMAGES = {"tiny": (2, 32), "small": (8, 256), "base": (32, 224)}  # batch, image side


def resnet18(size="tiny", batch=None, seq=None):
    return _resnet(size, (2, 2, 2, 2), BasicBlock, batch)


def resnet50(size="tiny", batch=None, seq=None):
    return _resnet(size, (3, 4, 6, 3), Bottleneck, batch)


def _resnet(size, layers, block, batch):
    tiny = size == "tiny"
    model = ResNet(layers, 10 if tiny else 1000, 16 if tiny else 64, block)
    _randomize_batch_norm(model)
    size_batch, side = IMAGES[size]
    return model.eval(), (torch.randn(batch or size_batch, 3, side, side),)


def _randomize_batch_norm(model):
    """Running statistics that are not 0 and 1, so that a wrong BatchNorm shows."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)


# --- nn.TransformerEncoderLayer ----------------------------------------------------------------


def transformer_encoder_layer(size="tiny", batch=None, seq=None):
    width, _, batch, seq = shape(size, batch, seq)
    layer = nn.TransformerEncoderLayer(
        width, heads(width), width * 4, dropout=0.1, batch_first=True
    )
    return layer.eval(), (torch.randn(batch, seq, width),)


# --- one nanoGPT block -------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, block_size, sdpa):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)
        self.n_head, self.n_embd, self.sdpa = heads, width, sdpa
        mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("bias", mask)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.sdpa:
            p = self.attn_dropout.p if self.training else 0
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:  # the causal softmax written by hand, as nanoGPT's fallback path writes it
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, width, heads, block_size, sdpa=True):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, block_size, sdpa)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


def nanogpt_block(size="tiny", batch=None, seq=None, sdpa=True):
    width, _, batch, seq = shape(size, batch, seq)
    return Block(width, heads(width), seq, sdpa).eval(), (torch.randn(batch, seq, width),)


def nanogpt_block_handwritten(size="tiny", batch=None, seq=None):
    return nanogpt_block(size, batch, seq, sdpa=False)


# --- Hugging Face transformers -----------------------------------------------------------------


def bert(size="tiny", batch=None, seq=None):
    from transformers import BertConfig, BertModel

    width, depth, batch, seq = shape(size, batch, seq)
    config = BertConfig(
        vocab_size=1000, hidden_size=width, num_hidden_layers=depth,
        num_attention_heads=heads(width),
        intermediate_size=width * 4, max_position_embeddings=seq,
    )  # fmt: skip
    return BertModel(config).eval(), (torch.randint(0, 1000, (batch, seq)),)


def gpt2(size="tiny", batch=None, seq=None):
    from transformers import GPT2Config, GPT2LMHeadModel

    width, depth, batch, seq = shape(size, batch, seq)
    config = GPT2Config(
        vocab_size=1000, n_embd=width, n_layer=depth, n_head=heads(width), n_positions=seq,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    return GPT2LMHeadModel(config).eval(), (torch.randint(0, 1000, (batch, seq)),)


VIT_IMAGES = {"tiny": (32, 8), "small": (224, 16), "base": (224, 16)}  # side, patch side


def vit(size="tiny", batch=None, seq=None):
    """ViT-B/16 at `"base"`: 224-pixel images in 16x16 patches, 768 wide, 12 layers, 12 heads."""
    from transformers import ViTConfig, ViTModel

    width, depth, batch, _ = shape(size, batch)
    side, patch = VIT_IMAGES[size]
    config = ViTConfig(
        image_size=side, patch_size=patch, hidden_size=width, num_hidden_layers=depth,
        num_attention_heads=heads(width), intermediate_size=width * 4,
    )  # fmt: skip
    return ViTModel(config).eval(), (torch.randn(batch, 3, side, side),)


LLAMA_BASE = (1024, 8)  # width, depth: the Llama-style model the mixed-precision issue timed


def llama(size="tiny", batch=None, seq=None):
    """A Llama: rotary position embeddings, RMSNorm, grouped-query attention (a quarter as
    many key/value heads as query heads) and a SwiGLU MLP (8/3 of the width, in 64s)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    width, depth, batch, seq = shape(size, batch, seq)
    if size == "base":
        width, depth = LLAMA_BASE
    n_heads = heads(width)
    config = LlamaConfig(
        vocab_size=1000, hidden_size=width, intermediate_size=64 * math.ceil(width * 8 / 3 / 64),
        num_hidden_layers=depth, num_attention_heads=n_heads,
        num_key_value_heads=max(1, n_heads // 4), max_position_embeddings=seq,
        bos_token_id=0, eos_token_id=0, pad_token_id=0,
    )  # fmt: skip
    return LlamaForCausalLM(config).eval(), (torch.randint(0, 1000, (batch, seq)),)


ZOO = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "transformer_encoder_layer": transformer_encoder_layer,
    "nanogpt_block": nanogpt_block,
    "nanogpt_block_handwritten": nanogpt_block_handwritten,
    "bert": bert,
    "gpt2": gpt2,
    "vit": vit,
    "llama": llama,
}
