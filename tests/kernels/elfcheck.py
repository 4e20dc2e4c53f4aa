"""Reading GPU images with the standard library only: ELF64 headers, symbol
tables and notes, and the msgpack of the AMDGPU code object metadata note.
Used by check_suite.py; raises ValueError on anything malformed."""

import struct

EM_CUDA = 190
EM_AMDGPU = 224
ELFABIVERSION_CUDA_V1 = 7  # e_flags hold the SM in bits 0..7; later ABIs in bits 8..15

SHT_SYMTAB, SHT_NOTE, SHT_DYNSYM = 2, 7, 11
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION = 0, 1, 2, 3
STV_DEFAULT, STV_INTERNAL, STV_HIDDEN, STV_PROTECTED = 0, 1, 2, 3
STO_CUDA_ENTRY = 0x10  # st_other bit of an NVIDIA kernel entry
NT_AMDGPU_METADATA = 32
# .nv.info records: a format byte, an attribute byte, then a 16-bit value
# (EIFMT_HVAL) or a 16-bit size and that many bytes (EIFMT_SVAL).
EIFMT_HVAL, EIFMT_SVAL = 3, 4
EIATTR_CBANK_PARAM_SIZE = 0x19


class Symbol:
    __slots__ = ('name', 'value', 'size', 'type', 'bind', 'other', 'shndx', 'table')

    def __init__(self, name, value, size, info, other, shndx, table):
        self.name, self.value, self.size = name, value, size
        self.type, self.bind = info & 0xf, info >> 4
        self.other, self.shndx, self.table = other, shndx, table

    @property
    def defined(self):
        return self.shndx != 0

    @property
    def visibility(self):
        return self.other & 3

    def describe(self):
        """'FUNC GLOBAL PROTECTED', as readelf prints a symbol."""
        types = {STT_NOTYPE: 'NOTYPE', STT_OBJECT: 'OBJECT', STT_FUNC: 'FUNC', STT_SECTION: 'SECTION'}
        binds = {STB_LOCAL: 'LOCAL', STB_GLOBAL: 'GLOBAL', STB_WEAK: 'WEAK'}
        vis = {STV_DEFAULT: 'DEFAULT', STV_INTERNAL: 'INTERNAL', STV_HIDDEN: 'HIDDEN',
               STV_PROTECTED: 'PROTECTED'}
        return (f'{types.get(self.type, self.type)} {binds.get(self.bind, self.bind)} '
                f'{vis[self.visibility]}')


class Elf:
    def __init__(self, data):
        if len(data) < 64 or data[:4] != b'\x7fELF':
            raise ValueError('not an ELF file')
        if data[4] != 2 or data[5] != 1:
            raise ValueError('not a little-endian ELF64 file')
        self.data = data
        self.osabi, self.abiversion = data[7], data[8]
        (self.type, self.machine, _, _, _, shoff, self.flags, _, _, _, shentsize, shnum,
         shstrndx) = struct.unpack_from('<HHIQQQIHHHHHH', data, 16)
        if shoff + shnum * shentsize > len(data) or (shnum and shentsize < 64):
            raise ValueError('section headers out of bounds')
        self.sections = []
        for i in range(shnum):
            name, stype, _, _, off, size, link, _, _, entsize = struct.unpack_from(
                '<IIQQQQIIQQ', data, shoff + i * shentsize)
            if stype != 8 and off + size > len(data):  # SHT_NOBITS has no bytes
                raise ValueError(f'section {i} out of bounds')
            self.sections.append({'name_off': name, 'type': stype, 'offset': off, 'size': size,
                                  'link': link, 'entsize': entsize})
        names = self.sections[shstrndx] if shstrndx < len(self.sections) else None
        for s in self.sections:
            s['name'] = self._str(names, s['name_off']) if names else ''
        self.symbols = []
        for s in self.sections:
            if s['type'] in (SHT_SYMTAB, SHT_DYNSYM):
                self._read_symbols(s)

    def _str(self, strtab, off):
        start = strtab['offset'] + off
        end = self.data.find(b'\0', start, strtab['offset'] + strtab['size'])
        if off >= strtab['size'] or end < 0:
            raise ValueError('string out of bounds')
        return self.data[start:end].decode('utf-8', 'replace')

    def _read_symbols(self, sec):
        if sec['link'] >= len(self.sections) or sec['entsize'] not in (0, 24):
            raise ValueError(f'bad symbol table {sec["name"]}')
        strtab = self.sections[sec['link']]
        table = 'dynsym' if sec['type'] == SHT_DYNSYM else 'symtab'
        for i in range(1, sec['size'] // 24):
            name, info, other, shndx, value, size = struct.unpack_from(
                '<IBBHQQ', self.data, sec['offset'] + i * 24)
            self.symbols.append(Symbol(self._str(strtab, name), value, size, info, other, shndx,
                                       table))

    def notes(self):
        """(owner, type, descriptor bytes) of every note in SHT_NOTE sections."""
        out = []
        for s in self.sections:
            if s['type'] != SHT_NOTE:
                continue
            pos, end = s['offset'], s['offset'] + s['size']
            while pos + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from('<III', self.data, pos)
                pos += 12
                name = self.data[pos:pos + namesz].rstrip(b'\0').decode('utf-8', 'replace')
                pos += (namesz + 3) & ~3
                if pos + descsz > end:
                    raise ValueError('note out of bounds')
                out.append((name, ntype, self.data[pos:pos + descsz]))
                pos += (descsz + 3) & ~3
        return out

    def cuda_sm(self):
        """The SM number in an NVIDIA image's e_flags (as LLVM's getNVPTXCPUName
        reads it). The arch-specific 'a' variant is not recorded there: ptxas
        writes the same flags for sm_90 and sm_90a."""
        if self.abiversion == ELFABIVERSION_CUDA_V1:
            return self.flags & 0xff
        return (self.flags >> 8) & 0xff

    def section_bytes(self, name):
        s = next((s for s in self.sections if s['name'] == name), None)
        return None if s is None else self.data[s['offset']:s['offset'] + s['size']]

    def cuda_param_size(self, kernel):
        """The parameter bank size ptxas recorded for `kernel` (the
        EIATTR_CBANK_PARAM_SIZE attribute of .nv.info.<kernel>), or None."""
        info = self.section_bytes('.nv.info.' + kernel)
        pos = 0
        while info is not None and pos + 4 <= len(info):
            fmt, attr = info[pos], info[pos + 1]
            if fmt == EIFMT_SVAL:
                size = struct.unpack_from('<H', info, pos + 2)[0]
                pos += 4 + size
            elif fmt == EIFMT_HVAL:
                if attr == EIATTR_CBANK_PARAM_SIZE:
                    return struct.unpack_from('<H', info, pos + 2)[0]
                pos += 4
            else:
                return None  # a record form this reader does not size
        return None

    def amdgpu_mach(self):
        return self.flags & 0xff


# EF_AMDGPU_MACH values of the AMD targets the suite builds for.
AMDGPU_MACH = {'gfx90a': 0x3f, 'gfx942': 0x4c, 'gfx1100': 0x41}


def unpack_msgpack(data):
    """Decodes one msgpack value (the subset the AMDGPU metadata uses)."""
    value, pos = _unpack(data, 0)
    if pos != len(data):
        raise ValueError('trailing bytes after msgpack value')
    return value


def _unpack(b, p):
    if p >= len(b):
        raise ValueError('msgpack truncated')
    c = b[p]
    p += 1

    def take(n):
        if p + n > len(b):
            raise ValueError('msgpack truncated')
        return b[p:p + n]

    if c <= 0x7f:
        return c, p
    if c >= 0xe0:
        return c - 0x100, p
    if 0x80 <= c <= 0x8f:
        return _map(b, p, c & 0x0f)
    if 0x90 <= c <= 0x9f:
        return _array(b, p, c & 0x0f)
    if 0xa0 <= c <= 0xbf:
        n = c & 0x1f
        return take(n).decode('utf-8', 'replace'), p + n
    if c == 0xc0:
        return None, p
    if c in (0xc2, 0xc3):
        return c == 0xc3, p
    fixed = {0xcc: '>B', 0xcd: '>H', 0xce: '>I', 0xcf: '>Q', 0xd0: '>b', 0xd1: '>h', 0xd2: '>i',
             0xd3: '>q', 0xca: '>f', 0xcb: '>d'}
    if c in fixed:
        size = struct.calcsize(fixed[c])
        return struct.unpack(fixed[c], take(size))[0], p + size
    lengths = {0xd9: ('>B', 'str'), 0xda: ('>H', 'str'), 0xdb: ('>I', 'str'),
               0xc4: ('>B', 'bin'), 0xc5: ('>H', 'bin'), 0xc6: ('>I', 'bin'),
               0xdc: ('>H', 'array'), 0xdd: ('>I', 'array'),
               0xde: ('>H', 'map'), 0xdf: ('>I', 'map')}
    if c not in lengths:
        raise ValueError(f'msgpack type 0x{c:02x} not supported')
    fmt, kind = lengths[c]
    size = struct.calcsize(fmt)
    n = struct.unpack(fmt, take(size))[0]
    p += size
    if kind == 'array':
        return _array(b, p, n)
    if kind == 'map':
        return _map(b, p, n)
    if p + n > len(b):
        raise ValueError('msgpack truncated')
    raw = b[p:p + n]
    return (raw.decode('utf-8', 'replace') if kind == 'str' else bytes(raw)), p + n


def _array(b, p, n):
    out = []
    for _ in range(n):
        v, p = _unpack(b, p)
        out.append(v)
    return out, p


def _map(b, p, n):
    out = {}
    for _ in range(n):
        k, p = _unpack(b, p)
        v, p = _unpack(b, p)
        out[k] = v
    return out, p


def amdgpu_kernels(elf):
    """The amdhsa.kernels list of the image's NT_AMDGPU_METADATA note."""
    notes = [d for owner, t, d in elf.notes() if owner == 'AMDGPU' and t == NT_AMDGPU_METADATA]
    if len(notes) != 1:
        raise ValueError(f'{len(notes)} NT_AMDGPU_METADATA notes (want 1)')
    meta = unpack_msgpack(notes[0])
    if not isinstance(meta, dict) or not isinstance(meta.get('amdhsa.kernels'), list):
        raise ValueError('AMDGPU metadata has no amdhsa.kernels list')
    return meta['amdhsa.kernels']
