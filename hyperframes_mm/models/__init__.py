from .backbones import *  # noqa: F401,F403
from .data_preprocessors import *  # noqa: F401,F403
from .heads import *  # noqa: F401,F403
from .recognizers import *  # noqa: F401,F403
