FROM nvcr.io/nvidia/pytorch:20.03-py3

