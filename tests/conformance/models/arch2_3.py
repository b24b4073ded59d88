"""Realistic architectures, part 4 of 4 (the cases are listed in tests/conformance/table_models.py)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetrace import Dim
from tests.conformance.models.base import C, B32 as B
from tests.conformance.inputs import rn, ri


class TimeReduction(nn.Module):
    """wenet Squeezeformer TimeReductionLayer1D + recover by repeat_interleave and crop."""

    def __init__(self, d=16, stride=2):
        super().__init__()
        self.stride = stride
        self.dw_conv = nn.Conv1d(d, d, 3, stride, padding=1, groups=d)
        self.pw_conv = nn.Conv1d(d, d, 1)

    def forward(self, xs, xs_lens, mask, mask_pad):
        xs = xs.transpose(1, 2)
        xs = xs.masked_fill(mask_pad.eq(0), 0.0)
        xs = self.pw_conv(self.dw_conv(xs)).transpose(1, 2)
        B_, T, D = xs.size()
        mask = mask[:, ::self.stride, ::self.stride]
        mask_pad = mask_pad[:, :, ::self.stride]
        L = mask_pad.size(-1)
        if L - T < 0:
            xs = xs[:, :L - T, :].contiguous()
        else:
            dummy_pad = torch.zeros(B_, L - T, D, device=xs.device)
            xs = torch.cat([xs, dummy_pad], dim=1)
        xs_lens = torch.div(xs_lens + 1, 2, rounding_mode="trunc")
        return xs, xs_lens, mask, mask_pad


class Squeezeformer(nn.Module):
    def __init__(self, feat=8, d=16, vocab=10):
        super().__init__()
        self.embed = nn.Linear(feat, d)
        self.pre = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.reduce = TimeReduction(d)
        self.mid = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.time_recover_layer = nn.Linear(d, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, feats, feat_lens):
        T = feats.size(1)
        mask_pad = (torch.arange(T, device=feats.device)[None, :] < feat_lens[:, None]).unsqueeze(1)
        mask = mask_pad & mask_pad.transpose(1, 2)
        xs = self.pre(self.embed(feats), src_key_padding_mask=~mask_pad.squeeze(1))
        recover_tensor = xs
        xs, lens, m2, mp2 = self.reduce(xs, feat_lens, mask, mask_pad)
        xs = self.mid(xs, src_key_padding_mask=~mp2.squeeze(1))
        xs = xs.repeat_interleave(2, dim=1)
        xs = xs[:, :recover_tensor.size(1), :].contiguous()
        xs = recover_tensor + self.time_recover_layer(xs)
        return self.out(xs).log_softmax(-1), lens, m2.sum((1, 2))


def squeezeformer():
    def mk(b, t):
        lens = torch.full((b,), t, dtype=torch.long)
        lens[0] = max(1, t - 3)
        return (rn(b, t, 8), lens), {}
    bb = B()
    spec = ({0: bb, 1: Dim("t", min=1, max=3000)}, {0: bb})
    return C(Squeezeformer(), mk, spec, (2, 21), [(1, 1), (3, 64)], (2, 3001), edges=[(1, 2), (1, 3000), (4, 7)])


# =========================================================================================
# Tabular / retrieval / losses
# =========================================================================================
class TabTransformer(nn.Module):
    """lucidrains/tab-transformer-pytorch: categories offset by a cumsum buffer, a transformer
    over the column embeddings, LayerNorm on continuous features, MLP head."""

    def __init__(self, categories=(3, 5, 4, 7), num_continuous=4, dim=8, num_special_tokens=2, out=1):
        super().__init__()
        total_tokens = sum(categories) + num_special_tokens
        categories_offset = F.pad(torch.tensor(list(categories)), (1, 0), value=num_special_tokens)
        categories_offset = categories_offset.cumsum(dim=-1)[:-1]
        self.register_buffer("categories_offset", categories_offset)
        self.num_categories, self.num_continuous = len(categories), num_continuous
        self.embeds = nn.Embedding(total_tokens, dim)
        self.transformer = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 2, 16, 0.0, batch_first=True), 2)
        self.norm = nn.LayerNorm(num_continuous)
        d_in = dim * len(categories) + num_continuous
        self.mlp = nn.Sequential(nn.Linear(d_in, 2 * d_in), nn.ReLU(), nn.Linear(2 * d_in, out))

    def forward(self, x_categ, x_cont, return_attn=False):
        assert x_categ.shape[-1] == self.num_categories, f"you must pass in {self.num_categories} values for your categories input"
        x_categ = x_categ + self.categories_offset
        x = self.transformer(self.embeds(x_categ))
        flat_categ = x.flatten(1)
        assert x_cont.shape[1] == self.num_continuous
        normed_cont = self.norm(x_cont)
        return self.mlp(torch.cat((flat_categ, normed_cont), dim=-1))


def tabtransformer():
    def mk(b):
        cat = torch.stack([ri(c, b) for c in (3, 5, 4, 7)], 1)
        return (cat, rn(b, 4)), {}
    bb = Dim("batch", min=1, max=1024)
    spec = ({0: bb}, {0: bb})
    return C(TabTransformer(), mk, spec, (5,), [(1,), (64,)], (1025,), edges=[(1024,)])


class TwoTower(nn.Module):
    """DPR / sentence-transformers style retrieval: two encoders, masked mean pooling,
    normalized embeddings, logits = q @ d.T / temperature, in-batch negatives loss."""

    def __init__(self, vocab=40, d=16, temperature=0.05):
        super().__init__()
        self.q_emb, self.d_emb = nn.Embedding(vocab, d, padding_idx=0), nn.Embedding(vocab, d, padding_idx=0)
        self.q_enc = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.d_enc = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.temperature = temperature

    @staticmethod
    def mean_pooling(token_embeddings, attention_mask):
        input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
        return torch.sum(token_embeddings * input_mask_expanded, 1) / torch.clamp(input_mask_expanded.sum(1), min=1e-9)

    def forward(self, q_ids, q_mask, d_ids, d_mask):
        q = self.mean_pooling(self.q_enc(self.q_emb(q_ids)), q_mask)
        d = self.mean_pooling(self.d_enc(self.d_emb(d_ids)), d_mask)
        q, d = F.normalize(q, dim=-1), F.normalize(d, dim=-1)
        scores = q @ d.T / self.temperature
        labels = torch.arange(scores.size(0), device=scores.device, dtype=torch.long)
        loss = F.cross_entropy(scores, labels)
        acc = (scores.argmax(-1) == labels).float().mean()
        return loss, scores, acc


def two_tower():
    def mk(b, lq, ld):
        qm = torch.ones(b, lq, dtype=torch.long)
        qm[0, (lq + 1) // 2:] = 0
        dm = torch.ones(b, ld, dtype=torch.long)
        dm[-1, (ld + 1) // 2:] = 0
        return (ri(40, b, lq, lo=1) * qm, qm, ri(40, b, ld, lo=1) * dm, dm), {}
    bb, lq, ld = B(), Dim("q_len", min=1, max=64), Dim("d_len", min=1, max=512)
    spec = ({0: bb, 1: lq}, {0: bb, 1: lq}, {0: bb, 1: ld}, {0: bb, 1: ld})
    return C(TwoTower(), mk, spec, (4, 6, 20), [(1, 1, 1), (8, 64, 33)], (4, 65, 20), edges=[(32, 2, 512)])


class CTCModel(nn.Module):
    """ESPnet/wenet-style: Conv2dSubsampling4 (two stride-2 convs), encoder layer,
    log_softmax, F.ctc_loss with lengths ((L - 1) // 2 - 1) // 2."""

    def __init__(self, idim=8, d=16, vocab=7):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, d, 3, 2), nn.ReLU(), nn.Conv2d(d, d, 3, 2), nn.ReLU())
        self.out = nn.Linear(d * (((idim - 1) // 2 - 1) // 2), d)
        self.enc = nn.TransformerEncoderLayer(d, 2, 32, 0.0, batch_first=True)
        self.ctc_lo = nn.Linear(d, vocab)

    def forward(self, xs, xs_lens, ys, ys_lens):
        x = self.conv(xs.unsqueeze(1))
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
        hlens = ((xs_lens - 1) // 2 - 1) // 2
        pad = torch.arange(t, device=x.device)[None, :] >= hlens[:, None]
        x = self.enc(x, src_key_padding_mask=pad)
        log_probs = self.ctc_lo(x).log_softmax(2)
        loss = F.ctc_loss(log_probs.transpose(0, 1), ys, hlens, ys_lens, blank=0, reduction="sum", zero_infinity=True)
        return loss / log_probs.size(0), log_probs, hlens


def ctc_loss():
    def mk(b, t, s):
        lens = torch.full((b,), t, dtype=torch.long)
        lens[-1] = max(7, t - 4)
        ys_lens = torch.full((b,), s, dtype=torch.long)
        ys_lens[0] = max(1, s - 1)
        return (rn(b, t, 8), lens, ri(7, b, s, lo=1), ys_lens), {}
    bb, t, s = B(), Dim("frames", min=7, max=2000), Dim("labels", min=1, max=100)
    spec = ({0: bb, 1: t}, {0: bb}, {0: bb, 1: s}, {0: bb})
    return C(CTCModel(), mk, spec, (2, 40, 4), [(1, 7, 1), (3, 99, 9)], (2, 6, 4), edges=[(1, 2000, 100), (2, 8, 2)])


class PositionalEncoding(nn.Module):
    """pytorch/examples word_language_model PositionalEncoding (batch_first variant)."""

    def __init__(self, d_model, dropout=0.1, max_len=512):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.dropout(x + self.pe[:, :x.size(1), :])


class Seq2SeqTransformer(nn.Module):
    """PyTorch translation tutorial: nn.Transformer with generate_square_subsequent_mask on
    the target length and key padding masks from PAD ids, batch_first."""

    PAD = 1

    def __init__(self, src_vocab=30, tgt_vocab=25, d=16, tgt_is_causal=None):
        super().__init__()
        self.tgt_is_causal = tgt_is_causal
        self.transformer = nn.Transformer(d_model=d, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                          dim_feedforward=32, dropout=0.1, batch_first=True)
        self.generator = nn.Linear(d, tgt_vocab)
        self.src_tok_emb, self.tgt_tok_emb = nn.Embedding(src_vocab, d), nn.Embedding(tgt_vocab, d)
        self.positional_encoding = PositionalEncoding(d)
        self.d = d

    def forward(self, src, tgt):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device)
        src_padding_mask, tgt_padding_mask = src == self.PAD, tgt == self.PAD
        src_emb = self.positional_encoding(self.src_tok_emb(src) * math.sqrt(self.d))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(tgt) * math.sqrt(self.d))
        outs = self.transformer(src_emb, tgt_emb, None, tgt_mask, None, src_padding_mask, tgt_padding_mask, src_padding_mask,
                                tgt_is_causal=self.tgt_is_causal)
        return self.generator(outs)


def nn_transformer():
    def mk(b, s, t):
        src, tgt = ri(30, b, s, lo=2), ri(25, b, t, lo=2)
        src[0, (s + 1) // 2:] = 1
        tgt[-1, (t + 1) // 2:] = 1
        return (src, tgt), {}
    bb, s, t = B(), Dim("src", min=1, max=512), Dim("tgt", min=1, max=512)
    spec = ({0: bb, 1: s}, {0: bb, 1: t})
    return C(Seq2SeqTransformer(), mk, spec, (2, 9, 7), [(1, 1, 1), (3, 40, 13)], (2, 513, 7), edges=[(2, 512, 512)])


class RNNModel(nn.Module):
    """pytorch/examples word_language_model RNNModel (LSTM, tied weights) + loss."""

    def __init__(self, ntoken=40, ninp=16, nhid=16, nlayers=2, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight
        self.nlayers, self.nhid = nlayers, nhid

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))

    def forward(self, data, targets):   # data: (T, B), as in the example's batchify
        hidden = self.init_hidden(data.size(1))
        emb = self.drop(self.encoder(data))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        output = F.log_softmax(decoded, dim=1)
        loss = F.nll_loss(output, targets.reshape(-1))
        return loss, output, hidden


def nn_transformer_causal():
    """the same with tgt_is_causal=True (skips nn.TransformerDecoder's mask inspection)."""
    c = nn_transformer()
    m = Seq2SeqTransformer(tgt_is_causal=True)
    m.load_state_dict(c.model.state_dict())
    c.model = m
    return c


def lstm_lm():
    mk = lambda t, b: ((ri(40, t, b), ri(40, t, b)), {})
    bb, t = B(), Dim("bptt", min=1, max=256)
    spec = ({0: t, 1: bb}, {0: t, 1: bb})
    return C(RNNModel(), mk, spec, (7, 3), [(1, 1), (35, 20)], (257, 3), edges=[(256, 2)])


# =========================================================================================
# transformers models called with labels
# =========================================================================================
def _cfg(cls, **kw):
    import transformers
    cfg = getattr(transformers, cls)(**kw)
    cfg.use_cache = False
    return cfg


def _hf_text(model, *, labels="copy", seq_max=64, sizes=((2, 12), (1, 2), (3, 33)), edges=((1, 64), (32, 2))):
    def mk(b, t):
        ids = ri(50, b, t, lo=3)
        mask = torch.ones(b, t, dtype=torch.long)
        if t > 1:
            mask[0, -(t // 3 + 1):] = 0
        if labels == "copy":
            lab = ids.clone()
            lab[mask == 0] = -100
        elif labels == "mlm":
            lab = torch.full_like(ids, -100)
            lab[:, ::3] = ids[:, ::3]
        else:
            lab = ri(3, b)
        return (), {"input_ids": ids, "attention_mask": mask, "labels": lab}
    bb, t = B(), Dim("seq", min=2, max=seq_max)   # min=1 is refused: SDPA's is_causal = q_len > 1
    spec = {"input_ids": {0: bb, 1: t}, "attention_mask": {0: bb, 1: t},
            "labels": {0: bb} if labels == "cls" else {0: bb, 1: t}}
    return C(model.eval(), mk, spec, sizes[0], list(sizes[1:]), (2, seq_max + 1), edges=edges, mode="values")


def hf_bert_mlm():
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("BertConfig", vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64)
    return _hf_text(tf.BertForMaskedLM(cfg), labels="mlm")


def hf_bert_cls():
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("BertConfig", vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64, num_labels=3)
    return _hf_text(tf.BertForSequenceClassification(cfg), labels="cls")


def hf_gpt2_lm():
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("GPT2Config", vocab_size=50, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return _hf_text(tf.GPT2LMHeadModel(cfg))


def hf_llama_lm():
    import transformers as tf
    torch.manual_seed(0)
    cfg = _cfg("LlamaConfig", vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return _hf_text(tf.LlamaForCausalLM(cfg))
