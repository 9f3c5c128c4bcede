import numpy as np

VALUE = np.arange(3).sum()
