"""Sequential, ModuleList, ModuleDict."""
import collections
import operator

from .module import Module


class Sequential(Module):
    """Runs its modules in order: Sequential(a, b, c)(x) == c(b(a(x)))."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0],
                                            collections.OrderedDict):
            self._layers = dict(modules[0])
        else:
            self._layers = {str(i): m for i, m in enumerate(modules)}
        for name, m in self._layers.items():
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: {name} is a "
                                f"{type(m).__name__}, not a Module")

    def _items(self):
        yield from self._layers.items()

    def __getattr__(self, name):
        layers = self.__dict__.get("_layers", {})
        if name in layers:
            return layers[name]
        return super().__getattr__(name)

    def __getitem__(self, idx):
        mods = list(self._layers.values())
        if isinstance(idx, slice):
            return Sequential(*mods[idx])
        return mods[operator.index(idx)]

    def __len__(self):
        return len(self._layers)

    def __iter__(self):
        return iter(self._layers.values())

    def append(self, module):
        self._layers[str(len(self._layers))] = module
        return self

    def forward(self, x):
        for m in self._layers.values():
            x = m(x)
        return x


class ModuleList(Module):
    def __init__(self, modules=()):
        super().__init__()
        self._list = list(modules)

    def _items(self):
        for i, m in enumerate(self._list):
            yield str(i), m

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(self._list[idx])
        return self._list[operator.index(idx)]

    def __setitem__(self, idx, module):
        self._list[operator.index(idx)] = module

    def __len__(self):
        return len(self._list)

    def __iter__(self):
        return iter(self._list)

    def append(self, module):
        self._list.append(module)
        return self

    def extend(self, modules):
        self._list.extend(modules)
        return self


class ModuleDict(Module):
    def __init__(self, modules=None):
        super().__init__()
        self._dict = dict(modules or {})

    def _items(self):
        yield from self._dict.items()

    def __getitem__(self, key):
        return self._dict[key]

    def __setitem__(self, key, module):
        self._dict[key] = module

    def __contains__(self, key):
        return key in self._dict

    def __len__(self):
        return len(self._dict)

    def __iter__(self):
        return iter(self._dict)

    def keys(self):
        return self._dict.keys()

    def values(self):
        return self._dict.values()

    def items(self):
        return self._dict.items()
